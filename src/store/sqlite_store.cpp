#include "store/sqlite_store.hpp"

#include "store/sqlite_grant_log.hpp"
#include "store/state_codec.hpp"
#include "util/clock.hpp"

#include <fmt/format.h>

namespace ratelimit::store {

SqliteStore::SqliteStore(std::string path, core::Nanos lock_timeout)
    : m_database(std::move(path), lock_timeout),
      m_select(m_database.handle(), "SELECT id, algorithm, clock, limits FROM keys WHERE name = ?1"),
      m_insert(m_database.handle(),
               "INSERT INTO keys (name, algorithm, clock, limits) VALUES (?1, ?2, ?3, ?4)"),
      m_update(m_database.handle(), "UPDATE keys SET clock = ?2, limits = ?3 WHERE id = ?1") {}

SqliteStore::~SqliteStore() = default;

template <typename Body>
auto SqliteStore::transaction(Body&& body) {
  m_database.lock();
  struct Unlock {
    SqliteDatabase& database;
    ~Unlock() { database.unlock(); }
  } unlock_at_exit{m_database};
  m_database.execute("BEGIN IMMEDIATE");
  try {
    auto result = body();
    m_database.execute("COMMIT");
    return result;
  } catch (...) {
    sqlite3_exec(m_database.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

core::Nanos SqliteStore::now() { return util::realtime_nanos(); }

std::optional<SqliteStore::Row> SqliteStore::find(std::string_view key) {
  m_select.bind_blob(1, key);
  std::optional<Row> row;
  if (m_select.step()) {
    auto algorithm = core::parse_algorithm(
        std::string_view(reinterpret_cast<const char*>(m_select.column_blob(1).data()),
                         m_select.column_blob(1).size()));
    auto limits = decode_limits(m_select.column_blob(3));
    if (!algorithm || !limits) {
      m_select.reset();
      throw StoreError(fmt::format("database \"{}\": the state of key \"{}\" is damaged; "
                                   "run ratelimit reset on the key",
                                   m_database.path(), key));
    }
    row = Row{m_select.column_int(0), {*algorithm, m_select.column_int(2), *limits}};
  }
  m_select.reset();
  return row;
}

SqliteStore::Row SqliteStore::find_or_create(std::string_view key, core::Algorithm algorithm) {
  if (auto row = find(key)) {
    return *row;
  }
  Row row{0, {algorithm, 0, {}}};
  m_insert.bind_blob(1, key)
      .bind_text(2, core::algorithm_name(algorithm))
      .bind(3, 0)
      .bind_blob(4, "")
      .run();
  row.id = sqlite3_last_insert_rowid(m_database.handle());
  return row;
}

void SqliteStore::write(const Row& row) {
  std::string limits = encode_limits(row.state.limits);
  m_update.bind(1, row.id).bind(2, row.state.clock).bind_blob(3, limits).run();
}

void SqliteStore::erase(std::int64_t id) {
  Statement erase_log(m_database.handle(), "DELETE FROM grant_log WHERE key_id = ?1");
  erase_log.bind(1, id).run();
  Statement erase_key(m_database.handle(), "DELETE FROM keys WHERE id = ?1");
  erase_key.bind(1, id).run();
}

core::Decision SqliteStore::decide(std::string_view key, core::Algorithm algorithm,
                                   std::span<const core::Limit> limits, core::Request request) {
  return transaction([&] {
    std::optional<Row> existing = find(key);
    if (existing && existing->state.algorithm != algorithm) {
      throw KeyConflict(key_conflict_message(key, existing->state.algorithm, algorithm));
    }
    // The clock is read under the lock, so that decisions on a key are made in the order
    // of their times.
    request.now = now();
    Row row = existing ? *existing : Row{0, {algorithm, 0, {}}};
    if (!existing && algorithm == core::Algorithm::sliding_log) {
      row = find_or_create(key, algorithm); // the log's entries need the key's id
    }
    SqliteGrantLog log(m_database.handle(), row.id);
    core::Decision decision = core::decide(row.state, limits, log, request);
    if (decision.allowed) {
      if (row.id == 0) {
        row.id = find_or_create(key, algorithm).id;
      }
      write(row);
    }
    return decision;
  });
}

void SqliteStore::give_back(std::string_view key, core::Algorithm algorithm,
                            std::span<const core::Limit> limits, const core::Grant& grant) {
  transaction([&] {
    std::optional<Row> row = find(key);
    if (!row || row->state.algorithm != algorithm) {
      return 0; // reset meanwhile: there is nothing to give back to
    }
    SqliteGrantLog log(m_database.handle(), row->id);
    core::give_back(row->state, limits, log, now(), grant);
    write(*row);
    return 0;
  });
}

std::vector<KeyStatus> SqliteStore::status(std::span<const std::string> keys) {
  return transaction([&] {
    std::vector<KeyStatus> result;
    core::Nanos time = now();
    auto add = [&](std::string name, const Row& row) {
      SqliteGrantLog log(m_database.handle(), row.id);
      core::Decision standing = core::inspect(row.state, log, time);
      result.push_back({std::move(name), row.state, std::move(standing)});
    };
    if (!keys.empty()) {
      for (const std::string& key : keys) {
        if (auto row = find(key)) {
          add(key, *row);
        }
      }
      return result;
    }
    Statement all(m_database.handle(), "SELECT name FROM keys ORDER BY name");
    std::vector<std::string> names;
    while (all.step()) {
      names.emplace_back(all.column_blob(0));
    }
    all.reset();
    for (const std::string& name : names) {
      if (auto row = find(name)) {
        add(name, *row);
      }
    }
    return result;
  });
}

std::size_t SqliteStore::reset(std::span<const std::string> keys, bool all) {
  return transaction([&] {
    std::size_t removed = 0;
    if (all) {
      Statement count(m_database.handle(), "SELECT count(*) FROM keys");
      count.step();
      removed = static_cast<std::size_t>(count.column_int(0));
      count.reset();
      m_database.execute("DELETE FROM grant_log; DELETE FROM keys");
      return removed;
    }
    for (const std::string& key : keys) {
      if (auto row = find(key)) {
        erase(row->id);
        ++removed;
      }
    }
    return removed;
  });
}

std::vector<std::string> SqliteStore::collect_garbage() {
  return transaction([&] {
    std::vector<std::string> removed;
    core::Nanos time = now();
    Statement all(m_database.handle(), "SELECT name FROM keys");
    std::vector<std::string> names;
    while (all.step()) {
      names.emplace_back(all.column_blob(0));
    }
    all.reset();
    for (const std::string& name : names) {
      auto row = find(name);
      SqliteGrantLog log(m_database.handle(), row->id);
      if (core::is_fresh(row->state, log, time)) {
        erase(row->id);
        removed.push_back(name);
      }
    }
    return removed;
  });
}

} // namespace ratelimit::store
