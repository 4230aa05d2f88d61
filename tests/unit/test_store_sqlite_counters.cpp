// The SQLite store's counters: what decisions add, what reset and the collections forget,
// and the upgrade of a version 2 database.
#include "store/sqlite/sqlite_database.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <sqlite3.h>

using namespace ratelimit;

using test::TemporaryDatabase;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;
constexpr core::Nanos k_start = 1'750'000'000 * k_second;

// A store on a fake clock.
struct FakeClockStore {
  TemporaryDatabase database;
  core::Nanos clock = k_start;
  store::sqlite::SqliteStore store{database.path(), k_second, store::Creation::if_missing,
                                   [this] { return clock; }};

  core::Decision decide(std::string_view key, core::Limit limit, bool reserve = false) {
    core::Request request;
    request.reserve = reserve;
    std::vector<core::Limit> limits{limit};
    return store.decide(key, core::Algorithm::token_bucket, true, limits, request);
  }

  std::optional<store::KeyCounters> counters_of(std::string_view key) {
    for (const store::NamedCounters& named : store.counters({})) {
      if (named.key == key) {
        return named.counters;
      }
    }
    return std::nullopt;
  }
};

core::Limit per_minute(std::int64_t count) {
  return {{count, 60 * k_second}, count};
}

// Makes the database at `path`, in which the key "kept" (3 a minute) is decided once.
void decide_kept_once(const std::string& path) {
  store::sqlite::SqliteStore store(path, k_second, store::Creation::if_missing,
                                   [] { return k_start; });
  std::vector<core::Limit> limits{per_minute(3)};
  store.decide("kept", core::Algorithm::token_bucket, true, limits, {});
}

// Runs `sql` on the database at `path`, with a connection of its own.
void execute_on(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  INFO(std::string(sqlite3_errmsg(db)));
  CHECK(rc == SQLITE_OK);
  sqlite3_close(db);
}

// The first column of the first row `sql` returns on the database at `path`, as text.
std::string query_on(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK);
  std::string text;
  if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
    text = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return text;
}

} // namespace

TEST_CASE("store::sqlite::SqliteStore counts granted and limited requests and the waits") {
  FakeClockStore fake;
  CHECK(fake.store.counters({}).empty());
  CHECK(fake.decide("api", per_minute(2)).allowed);
  CHECK(fake.decide("api", per_minute(2)).allowed);
  CHECK_FALSE(fake.decide("api", per_minute(2)).allowed);
  CHECK(fake.counters_of("api") == store::KeyCounters{2, 1, 0});
  // A reservation counts the time it is to sleep, in microseconds.
  core::Decision reserved = fake.decide("api", per_minute(2), true);
  REQUIRE(reserved.allowed);
  CHECK(reserved.wait == 30 * k_second);
  CHECK(fake.counters_of("api") == store::KeyCounters{3, 1, 30'000'000});
  // status shows them with the state.
  std::vector<std::string> keys{"api"};
  std::vector<store::KeyStatus> status = fake.store.status(keys);
  REQUIRE(status.size() == 1);
  CHECK(status[0].counters == store::KeyCounters{3, 1, 30'000'000});
}

TEST_CASE("store::sqlite::SqliteStore: counters outlive the key's state, until reset") {
  FakeClockStore fake;
  fake.decide("short", {{5, k_second}, 5});
  fake.decide("other", per_minute(1));
  fake.decide("other", per_minute(1));
  fake.clock += 10 * k_second;
  std::vector<std::string> removed = fake.store.collect_garbage();
  CHECK(removed == std::vector<std::string>{"short"});
  std::vector<std::string> short_key{"short"};
  CHECK(fake.store.status(short_key).empty());
  CHECK(fake.counters_of("short") == store::KeyCounters{1, 0, 0});
  // Used again: the counters go on from where they were.
  fake.decide("short", {{5, k_second}, 5});
  CHECK(fake.counters_of("short") == store::KeyCounters{2, 0, 0});
  // reset forgets them, and counts a key that has counters only.
  fake.clock += 10 * k_second;
  fake.store.collect_garbage();
  CHECK(fake.store.reset(short_key, false) == 1);
  CHECK_FALSE(fake.counters_of("short"));
  CHECK(fake.store.reset(short_key, false) == 0);
  CHECK(fake.counters_of("other") == store::KeyCounters{1, 1, 0});
  CHECK(fake.store.reset({}, true) == 1);
  CHECK(fake.store.counters({}).empty());
}

TEST_CASE("store::sqlite::SqliteStore forgets counters untouched for the retention") {
  FakeClockStore fake;
  fake.decide("old", {{5, k_second}, 5});
  fake.clock += store::k_counter_retention - 10 * k_second;
  fake.decide("recent", {{5, k_second}, 5});
  fake.store.collect_garbage();
  CHECK(fake.counters_of("old"));
  // Past the retention and the rounding of the time they were touched (about 73 minutes).
  fake.clock += 3 * 3600 * k_second;
  fake.store.collect_garbage();
  CHECK_FALSE(fake.counters_of("old"));
  CHECK(fake.counters_of("recent") == store::KeyCounters{1, 0, 0});
  // The collections made by decisions forget them too.
  fake.clock += store::k_counter_retention + 3 * 3600 * k_second;
  for (int i = 0; i < 200 && fake.counters_of("recent"); ++i) {
    fake.clock += 1;
    fake.decide("busy", {{1'000'000, k_second}, 1'000'000});
  }
  CHECK_FALSE(fake.counters_of("recent"));
}

TEST_CASE("store::sqlite::SqliteStore: a decision an hour later moves the time the counters were "
          "touched") {
  FakeClockStore fake;
  fake.decide("k", {{5, k_second}, 5});
  fake.clock += 2 * 3600 * k_second;
  fake.decide("k", {{5, k_second}, 5});
  CHECK(fake.counters_of("k") == store::KeyCounters{2, 0, 0});
  // Kept for the retention after the second decision, not the first.
  fake.clock += store::k_counter_retention - 3600 * k_second;
  fake.store.collect_garbage();
  CHECK(fake.counters_of("k") == store::KeyCounters{2, 0, 0});
  fake.clock += 3 * 3600 * k_second;
  fake.store.collect_garbage();
  CHECK_FALSE(fake.counters_of("k"));
}

TEST_CASE("store::sqlite::SqliteDatabase upgrades a version 2 database: empty counters") {
  TemporaryDatabase database;
  decide_kept_once(database.path());
  // Back to version 2 as that version made it: no counters table, none in the keys' rows.
  execute_on(database.path(),
             "DROP TABLE counters; ALTER TABLE keys DROP COLUMN granted; "
             "ALTER TABLE keys DROP COLUMN limited; ALTER TABLE keys DROP COLUMN waited_us; "
             "ALTER TABLE keys DROP COLUMN touched_at; PRAGMA user_version = 2;");
  core::Nanos clock = k_start + k_second;
  store::sqlite::SqliteStore store(database.path(), k_second, store::Creation::never,
                                   [&clock] { return clock; });
  CHECK(store.counters({}).empty());
  std::vector<std::string> keys{"kept"};
  std::vector<store::KeyStatus> status = store.status(keys);
  REQUIRE(status.size() == 1);
  CHECK(status[0].standing.remaining == 2);
  std::vector<core::Limit> limits{per_minute(3)};
  CHECK(store.decide("kept", core::Algorithm::token_bucket, true, limits, {}).allowed);
  CHECK(store.counters({}).size() == 1);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(database.path().c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr);
  REQUIRE(sqlite3_step(version) == SQLITE_ROW);
  CHECK(sqlite3_column_int(version, 0) == store::sqlite::k_schema_version);
  sqlite3_finalize(version);
  sqlite3_close(db);
}

TEST_CASE("store::sqlite::SqliteDatabase upgrades a version 4 database: the counters move into the "
          "keys' rows") {
  TemporaryDatabase database;
  decide_kept_once(database.path());
  // As version 4 kept them: in the counters table, for a key that has a row and for one that
  // has none (collected).
  execute_on(database.path(),
             "INSERT INTO counters (name, granted, limited, waited_us, touched_at) VALUES "
             "(CAST('kept' AS BLOB), 7, 2, 5, 99), (CAST('gone' AS BLOB), 1, 3, 0, 99);"
             "ALTER TABLE keys DROP COLUMN granted; ALTER TABLE keys DROP COLUMN limited; "
             "ALTER TABLE keys DROP COLUMN waited_us; ALTER TABLE keys DROP COLUMN touched_at; "
             "PRAGMA user_version = 4;");
  core::Nanos clock = k_start + k_second;
  {
    store::sqlite::SqliteStore store(database.path(), k_second, store::Creation::never,
                                     [&clock] { return clock; });
    std::vector<store::NamedCounters> counters = store.counters({});
    REQUIRE(counters.size() == 2);
    CHECK(counters[0].key == "gone");
    CHECK(counters[0].counters == store::KeyCounters{1, 3, 0});
    CHECK(counters[1].key == "kept");
    CHECK(counters[1].counters == store::KeyCounters{7, 2, 5});
    std::vector<core::Limit> limits{per_minute(3)};
    CHECK(store.decide("kept", core::Algorithm::token_bucket, true, limits, {}).allowed);
    std::vector<std::string> keys{"kept"};
    CHECK(store.status(keys).at(0).counters == store::KeyCounters{8, 2, 5});
  }
  CHECK(query_on(database.path(), "SELECT group_concat(CAST(name AS TEXT)) FROM counters") ==
        "gone");
  CHECK(query_on(database.path(), "SELECT granted FROM keys WHERE name = CAST('kept' AS BLOB)") ==
        "8");
  CHECK(query_on(database.path(), "PRAGMA user_version") ==
        std::to_string(store::sqlite::k_schema_version));
}

TEST_CASE(
    "store::sqlite::SqliteStore: a key's counters are in one place, its row while it has one") {
  FakeClockStore fake;
  const core::Limit fast{{5, k_second}, 5};
  // Collected, a row leaves its counters to the counters table.
  fake.decide("k", fast);
  fake.decide("p", fast);
  fake.clock += 10 * k_second;
  CHECK(fake.store.collect_garbage() == std::vector<std::string>{"k", "p"});
  CHECK(query_on(fake.database.path(), "SELECT sum(granted) FROM counters") == "2");
  // The row made again for a key takes them.
  CHECK(fake.decide("k", fast).allowed);
  CHECK(query_on(fake.database.path(), "SELECT group_concat(CAST(name AS TEXT)) FROM counters") ==
        "p");
  CHECK(query_on(fake.database.path(), "SELECT granted FROM keys WHERE name = CAST('k' AS BLOB)") ==
        "2");
  CHECK(fake.counters_of("k") == store::KeyCounters{2, 0, 0});
  // So does the row a pause makes, and it leaves them again when collected.
  fake.store.pause("p", 60 * k_second);
  CHECK(query_on(fake.database.path(), "SELECT count(*) FROM counters") == "0");
  CHECK(fake.counters_of("p") == store::KeyCounters{1, 0, 0});
  fake.clock += 2 * 60 * k_second;
  CHECK(fake.store.collect_garbage() == std::vector<std::string>{"k", "p"});
  CHECK(fake.counters_of("k") == store::KeyCounters{2, 0, 0});
  CHECK(fake.counters_of("p") == store::KeyCounters{1, 0, 0});
}

TEST_CASE("store::sqlite::SqliteStore: a decision on a key writes one page, its counters with its "
          "state") {
  FakeClockStore fake;
  const core::Limit fast{{1000, k_second}, 1000};
  const core::Limit hourly{{1, 3600 * k_second}, 1};
  // The rows made, and the times the keys become fresh stored (within a grain: at most a
  // second ahead, or an hour for the denied key, which the denial leaves as it is).
  CHECK(fake.decide("granted", fast).allowed);
  CHECK(fake.decide("denied", hourly).allowed);
  std::filesystem::path wal = fake.database.path() + "-wal";
  for (int i = 0; i < 3; ++i) {
    auto before = std::filesystem::file_size(wal);
    CHECK(fake.decide("granted", fast).allowed);
    // One frame: a header of 24 bytes and the page.
    CHECK(std::filesystem::file_size(wal) - before == 24 + 4096);
    before = std::filesystem::file_size(wal);
    CHECK_FALSE(fake.decide("denied", hourly).allowed);
    CHECK(std::filesystem::file_size(wal) - before == 24 + 4096);
  }
  CHECK(fake.counters_of("granted") == store::KeyCounters{4, 0, 0});
  CHECK(fake.counters_of("denied") == store::KeyCounters{1, 3, 0});
}

TEST_CASE("store::sqlite::SqliteStore adds requests decided outside decide, and lists the counters "
          "asked") {
  FakeClockStore fake;
  fake.store.add_to_counters("jobs", true, 0);
  fake.store.add_to_counters("jobs", true, 2 * k_second);
  fake.store.add_to_counters("jobs", false, 5 * k_second); // a refusal waited for nothing
  CHECK(fake.counters_of("jobs") == store::KeyCounters{2, 1, 2'000'000});
  CHECK(fake.store.status({}).empty());
  CHECK(fake.decide("api", per_minute(2)).allowed);
  std::string asked[] = {"unknown", "jobs", "api"};
  std::vector<store::NamedCounters> counters = fake.store.counters(asked);
  REQUIRE(counters.size() == 2);
  CHECK(counters[0].key == "jobs");
  CHECK(counters[1].key == "api");
  CHECK(counters[1].counters == store::KeyCounters{1, 0, 0});
}

TEST_CASE("store::sqlite::SqliteStore adds requests decided outside decide to the key's row") {
  FakeClockStore fake;
  CHECK(fake.decide("api", per_minute(2)).allowed);
  fake.store.add_to_counters("api", true, 3 * k_second);
  fake.store.add_to_counters("api", false, 0);
  CHECK(fake.counters_of("api") == store::KeyCounters{2, 1, 3'000'000});
  CHECK(query_on(fake.database.path(), "SELECT count(*) FROM counters") == "0");
  // The key's state is left as it was.
  CHECK(fake.decide("api", per_minute(2)).allowed);
  CHECK_FALSE(fake.decide("api", per_minute(2)).allowed);
}
