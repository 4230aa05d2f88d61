#include "store/sqlite/sqlite_upgrade.hpp"

#include "core/limit.hpp"
#include "store/sqlite/sqlite_error.hpp"
#include "store/sqlite/sqlite_statement.hpp"
#include "store/sqlite/state_codec.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <vector>

namespace ratelimit::store::sqlite {

namespace {

void execute(sqlite3* db, const char* sql) {
  if (int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) {
    throw_sqlite_error(db, rc, "cannot upgrade the database", sqlite3_db_filename(db, "main"));
  }
}

// Adds the integer column `name` (NOT NULL DEFAULT 0) to the keys table, unless it has it:
// a database made by a later version and marked older, as the tests make them, has it.
// Adds the column `name` of `type` to `table` unless it has it, so that a step can be retried.
void add_missing_column(sqlite3* db, std::string_view name,
                        std::string_view type = "INTEGER NOT NULL DEFAULT 0",
                        std::string_view table = "keys") {
  Statement has(db,
                fmt::format("SELECT count(*) FROM pragma_table_info('{}') WHERE name = ?1", table));
  has.bind_text(1, name);
  bool present = has.step() && has.column_int(0) > 0;
  has.reset();
  if (!present) {
    execute(db, fmt::format("ALTER TABLE {} ADD COLUMN {} {};", table, name, type).c_str());
  }
}

struct OldKey {
  std::int64_t id = 0;
  std::vector<core::LimitState> limits;
};

} // namespace

const char* const k_counters_schema = R"sql(
-- By name, the counters of the names that have no row in keys (since version 6; a row keeps
-- its key's): those outlive the state, which garbage collection forgets once it is a fresh
-- key's. `touched_at` is when a decision last counted, rounded up (see SqliteStore);
-- counters untouched for k_counter_retention go.
CREATE TABLE IF NOT EXISTS counters (
  name BLOB PRIMARY KEY,
  granted INTEGER NOT NULL DEFAULT 0,
  limited INTEGER NOT NULL DEFAULT 0,
  waited_us INTEGER NOT NULL DEFAULT 0,
  touched_at INTEGER NOT NULL DEFAULT 0,
  -- The answers 429 and 503 observed for the key (since version 7).
  throttled INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS counters_by_touched_at ON counters (touched_at);
)sql";

void upgrade_from_version_1(sqlite3* db) {
  execute(db, "ALTER TABLE keys ADD COLUMN log_period INTEGER NOT NULL DEFAULT 0;"
              "ALTER TABLE grant_log RENAME TO grant_log_1;"
              "DROP INDEX IF EXISTS grant_log_by_time;"
              "CREATE TABLE grant_log (key_id INTEGER NOT NULL, cumulative INTEGER NOT NULL, "
              "at INTEGER NOT NULL, PRIMARY KEY (key_id, cumulative)) WITHOUT ROWID;"
              "CREATE INDEX grant_log_by_time ON grant_log (key_id, at);");
  std::vector<OldKey> keys;
  {
    Statement select(db, "SELECT id, limits FROM keys WHERE algorithm = 'sliding-log'");
    while (select.step()) {
      if (auto stored = decode_limits(select.column_blob(1))) {
        keys.push_back({select.column_int(0), std::move(stored->limits)});
      }
      // A damaged row stays as it is, for `reset`.
    }
  }
  {
    Statement entries(db, "SELECT at, cumulative FROM grant_log_1 WHERE key_id = ?1 AND "
                          "period = ?2 ORDER BY cumulative");
    Statement insert(db, "INSERT INTO grant_log (key_id, cumulative, at) VALUES (?1, ?2, ?3)");
    Statement update(db, "UPDATE keys SET limits = ?2, log_period = ?3 WHERE id = ?1");
    for (OldKey& key : keys) {
      // The logs of the key's limits merged into one: a grant that several limits logged
      // counts once for each, more than it cost, until it leaves the window. Never less.
      std::multimap<core::Nanos, std::int64_t> costs;
      core::Nanos log_period = 0;
      for (const core::LimitState& limit : key.limits) {
        log_period = std::max(log_period, limit.limit.rate.period);
        std::int64_t previous = limit.slots[2];
        entries.bind(1, key.id).bind(2, limit.limit.rate.period);
        while (entries.step()) {
          std::int64_t cumulative = entries.column_int(1);
          costs.emplace(entries.column_int(0), std::max<std::int64_t>(0, cumulative - previous));
          previous = cumulative;
        }
        entries.reset();
      }
      std::int64_t total = 0;
      core::Nanos last = 0;
      for (const auto& [at, cost] : costs) {
        if (cost == 0) {
          continue;
        }
        total += cost;
        last = at;
        insert.bind(1, key.id).bind(2, total).bind(3, at).run();
      }
      for (core::LimitState& limit : key.limits) {
        limit.slots = {last, total, 0};
      }
      update.bind(1, key.id).bind_blob(2, encode_limits(key.limits)).bind(3, log_period).run();
    }
  }
  execute(db, "DROP TABLE grant_log_1; PRAGMA user_version = 2;");
}

void upgrade_from_version_2(sqlite3* db) {
  // Each part of version 3 only where it is missing, so that the step can be retried.
  add_missing_column(db, "paused_until");
  execute(db, k_counters_schema);
  execute(db, "PRAGMA user_version = 3;");
}

void upgrade_from_version_5(sqlite3* db) {
  for (const char* column : {"granted", "limited", "waited_us", "touched_at"}) {
    add_missing_column(db, column);
  }
  // The counters of a key that has a row move into it; those of the others stay.
  execute(db, "UPDATE keys SET granted = c.granted, limited = c.limited, "
              "waited_us = c.waited_us, touched_at = c.touched_at "
              "FROM counters AS c WHERE c.name = keys.name;"
              "DELETE FROM counters WHERE name IN (SELECT name FROM keys);"
              "PRAGMA user_version = 6;");
}

void upgrade_from_version_6(sqlite3* db) {
  add_missing_column(db, "server", "BLOB");
  add_missing_column(db, "throttled");
  add_missing_column(db, "throttled", "INTEGER NOT NULL DEFAULT 0", "counters");
  execute(db, "PRAGMA user_version = 7;");
}

} // namespace ratelimit::store::sqlite
