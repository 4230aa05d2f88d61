#include "store/sqlite/sqlite_store.hpp"

#include "core/bounds.hpp"
#include "core/key_life.hpp"
#include "store/sqlite/sqlite_grant_log.hpp"
#include "store/sqlite/sqlite_key_row.hpp"
#include "store/sqlite/sqlite_run_slots.hpp"
#include "store/sqlite/state_codec.hpp"
#include "util/clock.hpp"
#include "util/key_text.hpp"

#include <fmt/format.h>

namespace ratelimit::store::sqlite {

namespace {

// A cheap coin with odds of one in `n`, seeded by the clock: consecutive nanosecond
// readings are mixed (splitmix64) so that a coarse clock cannot make it always or never
// land.
bool one_in(core::Nanos seed, int n) {
  std::uint64_t z = static_cast<std::uint64_t>(seed) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z % static_cast<std::uint64_t>(n) == 0;
}

} // namespace

SqliteStore::SqliteStore(std::string path, core::Nanos lock_timeout, Creation creation, Clock clock)
    : m_clock(std::move(clock)), m_database(std::move(path), lock_timeout, creation),
      m_grant_log(m_database.handle()),
      m_select(m_database.handle(),
               fmt::format("SELECT {} FROM keys WHERE name = ?1", k_state_columns)) {}

SqliteStore::~SqliteStore() = default;

Statement& SqliteStore::prepared(std::unique_ptr<Statement>& slot, const char* sql) {
  if (!slot) {
    slot = std::make_unique<Statement>(m_database.handle(), sql);
  }
  return *slot;
}

core::Nanos SqliteStore::now() {
  core::Nanos time = m_clock();
  if (time > core::k_max_time) {
    throw StoreError(clock_beyond_range_message(fmt::format("database \"{}\"", m_database.path())));
  }
  return time;
}

void SqliteStore::damaged(std::string_view key) const {
  throw DamagedState(fmt::format("database \"{}\": the state of key {} is damaged; "
                                 "forget it with `ratelimit reset {}`",
                                 m_database.path(), util::printable_key(key),
                                 util::shell_word_for_key(key)));
}

std::optional<SqliteStore::Row> SqliteStore::find(std::string_view key) {
  m_select.bind_blob(1, key);
  std::optional<Row> row;
  if (m_select.step()) {
    std::optional<core::KeyState> state = decode_state(m_select);
    if (!state) {
      m_select.reset();
      damaged(key);
    }
    row = Row{m_select.column_int(0), std::move(*state), m_select.column_int(4)};
  }
  m_select.reset();
  return row;
}

SqliteStore::Row SqliteStore::find_or_create(std::string_view key, core::Algorithm algorithm) {
  if (auto row = find(key)) {
    return *row;
  }
  Row row{0, {algorithm, 0, {}}};
  row.id = insert(key, core::algorithm_name(algorithm), row.state, 0, {}, 0);
  return row;
}

std::int64_t SqliteStore::insert(std::string_view key, std::string_view algorithm,
                                 const core::KeyState& state, core::Nanos fresh_at,
                                 KeyCounters tally, core::Nanos now) {
  core::Nanos touched = touched_at(now);
  take_counters_of(key, tally, touched);
  Statement& insert =
      prepared(m_insert, "INSERT INTO keys (name, algorithm, clock, limits, fresh_at, log_period, "
                         "paused_until, granted, limited, waited_us, touched_at, server, "
                         "throttled) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                         "?12, ?13)");
  std::string limits = encode_limits(state);
  std::string server = encode_server_word(state.server);
  insert.bind_blob(1, key)
      .bind_text(2, algorithm)
      .bind(3, state.clock)
      .bind_blob(4, limits)
      .bind(5, fresh_at)
      .bind(6, state.log_period)
      .bind(7, state.paused_until);
  bind_counters(insert, 8, tally, touched);
  bind_server(insert, 12, server);
  insert.bind(13, tally.throttled);
  insert.run();
  return sqlite3_last_insert_rowid(m_database.handle());
}

void SqliteStore::write(const Row& row, core::Nanos fresh_at, const KeyCounters& tally,
                        core::Nanos now) {
  std::string limits = encode_limits(row.state);
  std::string server = encode_server_word(row.state.server);
  Statement& update = update_statement();
  update.bind(1, row.id)
      .bind(2, row.state.clock)
      .bind_blob(3, limits)
      .bind(4, row.state.log_period);
  bind_counters(update, 5, tally, touched_at(now));
  bind_server(update, 9, server);
  update.run();
  // Apart, and only when it has moved: a column in the SET list of an UPDATE rewrites its
  // index entry, whatever its value.
  if (fresh_at != row.fresh_at) {
    set_fresh_at_statement().bind(1, row.id).bind(2, fresh_at).run();
  }
}

Statement& SqliteStore::set_fresh_at_statement() {
  return prepared(m_set_fresh_at, "UPDATE keys SET fresh_at = ?2 WHERE id = ?1");
}

Statement& SqliteStore::update_statement() {
  // One statement for a decision that writes the key's state and one that only counts (and
  // writes the state as it was): it is prepared before the lock is taken, and SQLite takes
  // longer to prepare an UPDATE than to run it.
  return prepared(m_update, "UPDATE keys SET clock = ?2, limits = ?3, log_period = ?4, "
                            "granted = granted + ?5, limited = limited + ?6, "
                            "waited_us = waited_us + ?7, touched_at = ?8, server = ?9 "
                            "WHERE id = ?1");
}

void SqliteStore::bind_server(Statement& statement, int parameter, const std::string& server) {
  // NULL for a key that holds nothing of a server's word, as the column's default.
  if (server.empty()) {
    statement.bind_null(parameter);
  } else {
    statement.bind_blob(parameter, server);
  }
}

void SqliteStore::erase(std::int64_t id) {
  keep_counters_of(id);
  prepared(m_erase_log, "DELETE FROM grant_log WHERE key_id = ?1").bind(1, id).run();
  prepared(m_erase_key, "DELETE FROM keys WHERE id = ?1").bind(1, id).run();
}

core::Decision SqliteStore::decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                                   std::span<const core::Limit> limits, core::Request request) {
  // Prepared before the lock is taken, so that the processes waiting for it do not wait for
  // SQLite to parse SQL: the statement that writes a key's row, and those of a collection
  // when this decision is to make one.
  update_statement();
  if (core::info(algorithm).keeps_log) {
    m_grant_log.prepare_for_grants();
  }
  bool collecting = one_in(m_clock(), k_gc_one_in);
  if (collecting) {
    prepare_collection();
  }
  return transaction([&] {
    Row row = find(key).value_or(Row{});
    // The clock is read under the lock, so that decisions on a key are made in the order
    // of their times.
    request.now = now();
    std::optional<core::KeyState> stored = stored_state(row);
    if (!stored && core::info(algorithm).keeps_log) {
      row = find_or_create(key, algorithm); // the log's entries need the key's id
    }
    SqliteGrantLog log(m_grant_log, row.id);
    core::KeyOutcome outcome =
        core::decide_key(std::move(stored), {algorithm, chosen, limits, request}, log);
    if (outcome.conflict) {
      throw KeyConflict(key_conflict_message(key, *outcome.conflict, algorithm));
    }
    write_outcome(key, row, outcome, counted(outcome.decision), request.now);
    if (collecting) {
      collect_some_garbage(request.now);
    }
    return std::move(outcome.decision);
  });
}

void SqliteStore::give_back(std::string_view key, core::Algorithm algorithm,
                            std::span<const core::Limit> limits, const core::Grant& grant) {
  transaction([&] {
    Row row = find(key).value_or(Row{});
    core::Nanos time = now();
    SqliteGrantLog log(m_grant_log, row.id);
    core::KeyOutcome outcome =
        core::give_back_to_key(stored_state(row), algorithm, limits, grant, time, log);
    write_outcome(key, row, outcome, {}, time);
    return 0;
  });
}

std::optional<core::KeyState> SqliteStore::stored_state(const Row& row) {
  if (row.id == 0) {
    return std::nullopt;
  }
  return row.state;
}

void SqliteStore::write_outcome(std::string_view key, Row& row, core::KeyOutcome& outcome,
                                const KeyCounters& tally, core::Nanos now) {
  bool counts = tally != KeyCounters{};
  switch (outcome.write) {
  case core::KeyWrite::nothing:
    if (counts) {
      count(key, row, tally, now); // the row as it was
    }
    return;
  case core::KeyWrite::erase:
    erase(row.id);
    if (counts) {
      count(key, Row{}, tally, now);
    }
    return;
  case core::KeyWrite::state:
    if (row.id == 0) {
      insert(key, core::algorithm_name(outcome.state.algorithm), outcome.state,
             fresh_at(outcome.fresh_at), tally, now);
      return;
    }
    if (outcome.takes_algorithm || outcome.forgot) {
      prepared(m_adopt, "UPDATE keys SET algorithm = ?2, paused_until = ?3 WHERE id = ?1")
          .bind(1, row.id)
          .bind_text(2, core::algorithm_name(outcome.state.algorithm))
          .bind(3, outcome.state.paused_until)
          .run();
    }
    row.state = std::move(outcome.state);
    write(row, fresh_at(outcome.fresh_at), tally, now);
    return;
  }
}

std::vector<KeyStatus> SqliteStore::status(std::span<const std::string> keys) {
  return read_transaction([&] {
    std::vector<KeyStatus> result;
    core::Nanos time = now();
    auto add = [&](std::string name, std::int64_t id, core::KeyState state) {
      SqliteGrantLog log(m_grant_log, id);
      core::Decision standing = core::inspect(state, log, time);
      KeyCounters counters = counters_of(name);
      result.push_back({std::move(name), {}, std::move(state), std::move(standing), counters});
    };
    auto add_damaged = [&](std::string name, const DamagedState& error) {
      result.push_back({std::move(name), error.what(), {}, {}, {}});
    };
    if (!keys.empty()) {
      for (const std::string& key : keys) {
        try {
          if (auto row = find(key)) {
            add(key, row->id, std::move(row->state));
          }
        } catch (const DamagedState& error) {
          add_damaged(key, error);
        }
      }
      return result;
    }
    // Every key in one pass over the table, in name order.
    Statement all(m_database.handle(),
                  fmt::format("SELECT {}, name FROM keys ORDER BY name", k_state_columns));
    std::vector<std::pair<std::string, std::optional<Row>>> rows;
    while (all.step()) {
      std::string name(all.column_blob(k_name_column));
      std::optional<core::KeyState> state = decode_state(all);
      std::optional<Row> row;
      if (state) {
        row = Row{all.column_int(0), std::move(*state)};
      }
      rows.emplace_back(std::move(name), std::move(row));
    }
    all.reset();
    for (auto& [name, row] : rows) {
      if (!row) {
        try {
          damaged(name);
        } catch (const DamagedState& error) {
          add_damaged(std::move(name), error);
        }
        continue;
      }
      add(std::move(name), row->id, std::move(row->state));
    }
    return result;
  });
}

std::size_t SqliteStore::reset(std::span<const std::string> keys, bool all) {
  return transaction([&] {
    std::size_t removed = 0;
    if (all) {
      Statement count(m_database.handle(),
                      "SELECT count(*) FROM (SELECT name FROM keys UNION SELECT name FROM "
                      "counters)");
      count.step();
      removed = static_cast<std::size_t>(count.column_int(0));
      count.reset();
      Statement running(m_database.handle(),
                        "SELECT count(DISTINCT key) FROM runs WHERE key NOT IN "
                        "(SELECT name FROM keys)");
      running.step();
      removed += static_cast<std::size_t>(running.column_int(0));
      running.reset();
      m_database.execute("DELETE FROM grant_log; DELETE FROM keys; DELETE FROM counters; "
                         "DELETE FROM runs");
      return removed;
    }
    // By id alone, without decoding the state: a damaged key can be reset too.
    Statement& select_id = prepared(m_select_id, "SELECT id FROM keys WHERE name = ?1");
    for (const std::string& key : keys) {
      select_id.bind_blob(1, key);
      std::optional<std::int64_t> id;
      if (select_id.step()) {
        id = select_id.column_int(0);
      }
      select_id.reset();
      // Its run slots too: the commands that hold them finish without them, those that
      // wait come again.
      Statement forget_runs(m_database.handle(), "DELETE FROM runs WHERE key = ?1");
      forget_runs.bind_blob(1, key).run();
      bool had_runs = sqlite3_changes(m_database.handle()) > 0;
      if (id) {
        erase(*id);
      }
      prepared(m_erase_counters, "DELETE FROM counters WHERE name = ?1").bind_blob(1, key).run();
      if (id || had_runs || sqlite3_changes(m_database.handle()) > 0) {
        ++removed;
      }
    }
    return removed;
  });
}

std::unique_ptr<RunSlots> SqliteStore::run_slots(core::Nanos) {
  return std::make_unique<SqliteRunSlots>(m_database, m_clock);
}

std::vector<RunEntry> SqliteStore::run_entries(std::span<const std::string> keys) {
  return SqliteRunSlots::entries(m_database, keys);
}

} // namespace ratelimit::store::sqlite
