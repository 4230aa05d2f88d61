#include "store/sqlite/sqlite_run_slots.hpp"

#include "core/bounds.hpp"
#include "store/sqlite/sqlite_statement.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/signals.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <unistd.h>

namespace ratelimit::store::sqlite {

namespace {

// FNV-1a: a short, fixed name for a key of any bytes, in its liveness files' names. Two
// keys with one hash only wake each other needlessly.
std::string key_prefix(std::string_view key) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : key) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", hash);
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "localhost";
  }
  return name;
}

std::optional<core::Nanos> optional_column(const Statement& statement, int index) {
  if (statement.column_is_null(index)) {
    return std::nullopt;
  }
  return statement.column_int(index);
}

} // namespace

SqliteRunSlots::SqliteRunSlots(SqliteDatabase& database, Clock clock)
    : m_database(database), m_clock(std::move(clock)), m_directory(directory_of(database)) {}

SqliteRunSlots::~SqliteRunSlots() = default;

std::string SqliteRunSlots::directory_of(const SqliteDatabase& database) {
  return database.path() + ".runs";
}

template <typename Body>
auto SqliteRunSlots::transaction(Body&& body) {
  return m_database.write_transaction(std::forward<Body>(body));
}

core::Nanos SqliteRunSlots::now() {
  core::Nanos time = m_clock();
  if (time > core::k_max_time) {
    throw StoreError(clock_beyond_range_message(fmt::format("database \"{}\"", m_database.path())));
  }
  return time;
}

void SqliteRunSlots::insert(core::Nanos time, std::optional<core::Nanos> started) {
  Statement statement(m_database.handle(),
                      "INSERT INTO runs (key, cost, hold, pid, host, token, joined, started) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  // Bound without a copy (Statement binds SQLITE_STATIC): they must outlive the step.
  const std::string host = host_name();
  const std::string token = m_file->name();
  statement.bind_blob(1, m_key)
      .bind(2, m_cost)
      .bind(3, m_hold)
      .bind(4, ::getpid())
      .bind_text(5, host)
      .bind_text(6, token)
      .bind(7, time);
  if (started) {
    statement.bind(8, *started);
  }
  statement.run();
  m_id = sqlite3_last_insert_rowid(m_database.handle());
}

StartAnswer SqliteRunSlots::join(std::string_view key, std::int64_t cost, core::Nanos hold,
                                 std::span<const core::RunCap> caps) {
  m_key = std::string(key);
  m_prefix = key_prefix(key);
  m_cost = cost;
  m_hold = hold;
  try {
    // Locked before the row exists: nobody can take a live command for a dead one.
    m_file = std::make_unique<util::LivenessFile>(m_directory, m_prefix);
  } catch (const std::runtime_error& error) {
    throw StoreError(fmt::format("database \"{}\": {}", m_database.path(), error.what()));
  }
  m_id = 0;
  StartAnswer answer = transaction([&] { return attempt(caps); });
  wake_behind();
  return answer;
}

StartAnswer SqliteRunSlots::try_start(std::span<const core::RunCap> caps) {
  StartAnswer answer = transaction([&] { return attempt(caps); });
  wake_behind();
  return answer;
}

void SqliteRunSlots::wake_behind() {
  if (m_started && m_waiters_behind) {
    m_waiters_behind = false;
    m_file->touch();
  }
}

bool SqliteRunSlots::alive(const Row& row) const {
  return util::owner_alive(m_directory + "/" + row.token);
}

void SqliteRunSlots::bury(const Row& row, core::Nanos time) {
  if (!row.started || row.hold == 0) {
    Statement(m_database.handle(), "DELETE FROM runs WHERE id = ?1").bind(1, row.id).run();
  } else {
    // Dead by now: its slot is held as if it had exited now, never less.
    Statement(m_database.handle(), "UPDATE runs SET ended = ?2 WHERE id = ?1")
        .bind(1, row.id)
        .bind(2, time)
        .run();
  }
  util::remove_file(m_directory + "/" + row.token);
}

StartAnswer SqliteRunSlots::attempt(std::span<const core::RunCap> caps) {
  StartAnswer answer;
  answer.now = now();
  core::Nanos longest = 0;
  for (const core::RunCap& cap : caps) {
    longest = std::max(longest, cap.hold);
  }
  std::vector<Row> rows;
  {
    Statement select(m_database.handle(), "SELECT id, cost, hold, token, started, ended FROM runs "
                                          "WHERE key = ?1 ORDER BY id");
    select.bind_blob(1, m_key);
    while (select.step()) {
      rows.push_back({select.column_int(0), select.column_int(1), select.column_int(2),
                      std::string(select.column_blob(3)), optional_column(select, 4),
                      optional_column(select, 5)});
    }
  }
  // Joining, or forgotten by `reset` while it waited: it comes (again), last, and its row is
  // written once it is known whether it starts.
  bool arriving = std::none_of(rows.begin(), rows.end(),
                               [&](const Row& row) { return m_id != 0 && row.id == m_id; });
  if (arriving) {
    m_id = std::numeric_limits<std::int64_t>::max();
  }
  std::vector<core::RunHolder> holders;
  std::vector<const Row*> running;
  m_waiters_behind = false;
  for (const Row& row : rows) {
    if (row.ended && core::run_released({row.cost, *row.started, row.ended},
                                        std::max(row.hold, longest), answer.now)) {
      Statement(m_database.handle(), "DELETE FROM runs WHERE id = ?1").bind(1, row.id).run();
      continue;
    }
    if (row.id == m_id) {
      continue;
    }
    if (!row.started) {
      if (row.id > m_id) {
        m_waiters_behind = true;
      } else if (!answer.behind) {
        // The first live waiter ahead is enough to know: those behind it are not looked at.
        if (alive(row)) {
          answer.behind = true;
        } else {
          bury(row, answer.now);
        }
      }
      continue;
    }
    holders.push_back({row.cost, *row.started, row.ended});
    if (!row.ended) {
      running.push_back(&row);
    }
  }
  if (answer.behind) {
    if (arriving) {
      insert(answer.now, std::nullopt);
    }
    return answer;
  }
  answer.admission = core::admit_run(holders, caps, m_cost, answer.now, paused_until(answer.now));
  if (answer.admission.admission != core::Admission::now && answer.admission.paused_until == 0 &&
      !running.empty()) {
    // Only when it matters: a dead holder's slot is freed, and the caps asked again.
    holders.clear();
    bool buried = false;
    for (const Row& row : rows) {
      if (row.id == m_id || !row.started ||
          (row.ended && core::run_released({row.cost, *row.started, row.ended},
                                           std::max(row.hold, longest), answer.now))) {
        continue;
      }
      std::optional<core::Nanos> ended = row.ended;
      if (!ended && !alive(row)) {
        bury(row, answer.now);
        buried = true;
        if (row.hold == 0) {
          continue;
        }
        ended = answer.now;
      }
      holders.push_back({row.cost, *row.started, ended});
    }
    if (buried) {
      answer.admission = core::admit_run(holders, caps, m_cost, answer.now);
    }
  }
  answer.started = answer.admission.admission == core::Admission::now;
  m_started = answer.started;
  std::optional<core::Nanos> started;
  if (answer.started) {
    started = answer.now;
  }
  if (arriving) {
    insert(answer.now, started);
  } else if (answer.started) {
    Statement(m_database.handle(), "UPDATE runs SET started = ?2 WHERE id = ?1")
        .bind(1, m_id)
        .bind(2, answer.now)
        .run();
  }
  return answer;
}

core::Nanos SqliteRunSlots::paused_until(core::Nanos time) {
  // The key's row, which decisions and `pause` write, in the same transaction.
  Statement select(m_database.handle(), "SELECT paused_until FROM keys WHERE name = ?1");
  select.bind_blob(1, m_key);
  core::Nanos until = select.step() ? select.column_int(0) : 0;
  return until > time ? until : 0;
}

int SqliteRunSlots::wait_for_change(core::Nanos timeout, util::InterruptSignals& signals) {
  if (!m_watch) {
    try {
      m_watch = std::make_unique<util::DirectoryWatch>(m_directory);
    } catch (const std::runtime_error& error) {
      throw StoreError(fmt::format("database \"{}\": {}", m_database.path(), error.what()));
    }
    // What changed before the watch began is seen by looking once more.
    return signals.take_pending();
  }
  core::Nanos deadline = timeout == std::numeric_limits<core::Nanos>::max()
                             ? timeout
                             : util::monotonic_nanos() + timeout;
  for (;;) {
    core::Nanos left = deadline == std::numeric_limits<core::Nanos>::max()
                           ? deadline
                           : std::max<core::Nanos>(0, deadline - util::monotonic_nanos());
    bool readable = false;
    if (int signal = signals.sleep_or_readable(left, m_watch->fd(), readable)) {
      return signal;
    }
    if (!readable || m_watch->drain(m_prefix)) {
      return 0;
    }
  }
}

void SqliteRunSlots::leave() {
  transaction([&] {
    Statement(m_database.handle(), "DELETE FROM runs WHERE id = ?1").bind(1, m_id).run();
    return 0;
  });
  m_file.reset();
}

void SqliteRunSlots::finish() {
  if (m_hold == 0 && m_started) {
    // A command that exits with nothing to hold is a holder whose liveness file is gone: the
    // first look that needs its slot finds it so and forgets its row, in the transaction it
    // makes anyway. Dead rows count as running until then, so there are never more than the
    // cap's count of them. No transaction here.
    m_file.reset();
    return;
  }
  transaction([&] {
    if (m_hold == 0) {
      Statement(m_database.handle(), "DELETE FROM runs WHERE id = ?1").bind(1, m_id).run();
    } else {
      Statement(m_database.handle(),
                "UPDATE runs SET ended = ?2 WHERE id = ?1 AND started IS NOT NULL")
          .bind(1, m_id)
          .bind(2, now())
          .run();
    }
    return 0;
  });
  // Removed and closed after the commit: whoever it wakes sees the slot free.
  m_file.reset();
}

void SqliteRunSlots::collect(SqliteDatabase& database, core::Nanos now) {
  Statement(database.handle(), "DELETE FROM runs WHERE ended IS NOT NULL AND ended <= ?1 - hold")
      .bind(1, now)
      .run();
  std::string directory = directory_of(database);
  struct Dead {
    std::int64_t id;
    bool holds;
    std::string token;
  };
  std::vector<Dead> dead;
  {
    Statement select(database.handle(),
                     "SELECT id, started IS NOT NULL AND hold > 0, token FROM runs "
                     "WHERE ended IS NULL");
    while (select.step()) {
      std::string token(select.column_blob(2));
      if (!util::owner_alive(directory + "/" + token)) {
        dead.push_back({select.column_int(0), select.column_int(1) != 0, std::move(token)});
      }
    }
  }
  for (const Dead& row : dead) {
    if (row.holds) {
      Statement(database.handle(), "UPDATE runs SET ended = ?2 WHERE id = ?1")
          .bind(1, row.id)
          .bind(2, now)
          .run();
    } else {
      Statement(database.handle(), "DELETE FROM runs WHERE id = ?1").bind(1, row.id).run();
    }
    util::remove_file(directory + "/" + row.token);
  }
}

std::vector<RunEntry> SqliteRunSlots::entries(SqliteDatabase& database,
                                              std::span<const std::string> keys) {
  std::string directory = directory_of(database);
  std::vector<RunEntry> result;
  auto read = [&](Statement& select) {
    while (select.step()) {
      if (!select.column_is_null(6)) {
        continue; // ended: holds a slot for a while, but nobody runs
      }
      if (!util::owner_alive(directory + "/" + std::string(select.column_blob(4)))) {
        continue;
      }
      RunEntry entry;
      entry.key = std::string(select.column_blob(0));
      entry.pid = select.column_int(1);
      entry.host = std::string(select.column_blob(2));
      entry.cost = select.column_int(3);
      entry.running = !select.column_is_null(5);
      entry.since = entry.running ? select.column_int(5) : select.column_int(7);
      result.push_back(std::move(entry));
    }
    select.reset();
  };
  constexpr const char* k_columns = "SELECT key, pid, host, cost, token, started, ended, joined "
                                    "FROM runs";
  database.execute("BEGIN");
  try {
    if (keys.empty()) {
      Statement select(database.handle(), fmt::format("{} ORDER BY key, id", k_columns));
      read(select);
    } else {
      Statement select(database.handle(), fmt::format("{} WHERE key = ?1 ORDER BY id", k_columns));
      for (const std::string& key : keys) {
        select.bind_blob(1, key);
        read(select);
      }
    }
    database.execute("COMMIT");
  } catch (...) {
    sqlite3_exec(database.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return result;
}

} // namespace ratelimit::store::sqlite
