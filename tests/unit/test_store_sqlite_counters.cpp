// The SQLite store's counters: what decisions add, what reset and the collections forget,
// and the upgrade of a version 2 database.
#include "store/sqlite_database.hpp"
#include "store/sqlite_store.hpp"
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
  store::SqliteStore store{database.path(), k_second, store::Creation::if_missing,
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

} // namespace

TEST_CASE("store::SqliteStore counts granted and limited requests and the waits") {
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

TEST_CASE("store::SqliteStore: counters outlive the key's state, until reset") {
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

TEST_CASE("store::SqliteStore forgets counters untouched for the retention") {
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

TEST_CASE("store::SqliteStore: a decision an hour later moves the time the counters were "
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

TEST_CASE("store::SqliteDatabase upgrades a version 2 database: empty counters") {
  TemporaryDatabase database;
  {
    core::Nanos clock = k_start;
    store::SqliteStore store(database.path(), k_second, store::Creation::if_missing,
                             [&clock] { return clock; });
    std::vector<core::Limit> limits{per_minute(3)};
    store.decide("kept", core::Algorithm::token_bucket, true, limits, {});
  }
  // Back to version 2 as that version made it: no counters table.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(database.path().c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DROP TABLE counters; PRAGMA user_version = 2;", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  core::Nanos clock = k_start + k_second;
  store::SqliteStore store(database.path(), k_second, store::Creation::never,
                           [&clock] { return clock; });
  CHECK(store.counters({}).empty());
  std::vector<std::string> keys{"kept"};
  std::vector<store::KeyStatus> status = store.status(keys);
  REQUIRE(status.size() == 1);
  CHECK(status[0].standing.remaining == 2);
  std::vector<core::Limit> limits{per_minute(3)};
  CHECK(store.decide("kept", core::Algorithm::token_bucket, true, limits, {}).allowed);
  CHECK(store.counters({}).size() == 1);
  REQUIRE(sqlite3_open(database.path().c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr);
  REQUIRE(sqlite3_step(version) == SQLITE_ROW);
  CHECK(sqlite3_column_int(version, 0) == store::k_schema_version);
  sqlite3_finalize(version);
  sqlite3_close(db);
}

TEST_CASE("store::SqliteStore adds requests decided outside decide, and lists the counters asked") {
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
