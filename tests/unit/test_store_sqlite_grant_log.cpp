#include "store/sqlite/sqlite_database.hpp"
#include "store/sqlite/sqlite_grant_log.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <string>

using ratelimit::core::Nanos;
using ratelimit::store::sqlite::GrantLogStatements;
using ratelimit::store::sqlite::SqliteDatabase;
using ratelimit::store::sqlite::SqliteGrantLog;

namespace {

constexpr Nanos k_period = 60'000'000'000;
constexpr Nanos k_t0 = 1'700'000'000'000'000'000;

// A new database in a directory of its own, removed afterwards.
class ScratchDatabase {
public:
  ScratchDatabase() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ratelimit-unit.XXXXXX");
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    m_directory = pattern;
    m_database = std::make_unique<SqliteDatabase>(m_directory + "/test.db", k_period);
  }
  ~ScratchDatabase() {
    m_database.reset();
    std::filesystem::remove_all(m_directory);
  }
  SqliteDatabase& operator*() { return *m_database; }

private:
  std::string m_directory;
  std::unique_ptr<SqliteDatabase> m_database;
};

// The virtual machine steps of every statement prepared on `db` since the last call: the
// work SQLite did, which a scan makes grow with the table and an index seek does not.
long long steps_since_last_call(sqlite3* db) {
  long long steps = 0;
  for (sqlite3_stmt* statement = sqlite3_next_stmt(db, nullptr); statement != nullptr;
       statement = sqlite3_next_stmt(db, statement)) {
    steps += sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 1);
  }
  return steps;
}

// The steps one decision's questions take on a log of `entries`, in the middle of it.
long long steps_of_a_decision(std::int64_t entries) {
  ScratchDatabase database;
  sqlite3* db = (*database).handle();
  (*database).execute("BEGIN");
  GrantLogStatements statements(db);
  SqliteGrantLog log(statements, 1);
  for (std::int64_t i = 1; i <= entries; ++i) {
    log.append(k_t0 + i, i);
  }
  steps_since_last_call(db);
  std::int64_t middle = entries / 2;
  CHECK(log.cumulative_through(k_t0 + middle) == middle);
  CHECK(log.time_reaching(middle) == k_t0 + middle);
  CHECK(log.cumulative_before(middle + 1) == middle);
  CHECK(log.last_time() == k_t0 + entries);
  log.forget_before(1);
  log.append(k_t0 + entries + 1, entries + 1);
  long long steps = steps_since_last_call(db);
  (*database).execute("COMMIT");
  return steps;
}

} // namespace

TEST_CASE(
    "store::sqlite::SqliteGrantLog answers in index seeks: a long log costs what a short does") {
  long long short_log = steps_of_a_decision(10);
  long long long_log = steps_of_a_decision(100'000);
  INFO("steps with 10 entries: " << short_log << ", with 100000: " << long_log);
  CHECK(short_log > 0);
  // A seek is a fixed number of steps; a scan of 100 000 entries would be 100 000 or more.
  CHECK(long_log <= short_log * 2);
}
