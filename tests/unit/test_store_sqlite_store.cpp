// The SQLite store's critical section: what a decision does while it holds the database's
// lock, which every process waiting for the lock pays for too.
#include "store/sqlite/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <cerrno>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

using namespace ratelimit;

using test::TemporaryDatabase;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;
constexpr core::Nanos k_start = 1'750'000'000 * k_second;

// Counts the statements SQLite compiles while the flock of a database is held, on every
// connection opened while it exists: an authorizer, which SQLite calls only while it compiles
// a statement, tries the lock through a descriptor of its own.
class CompiledUnderLock {
public:
  explicit CompiledUnderLock(const std::string& path) {
    s_probe = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(s_probe >= 0);
    s_count = 0;
    sqlite3_auto_extension(reinterpret_cast<void (*)()>(&watch));
  }
  ~CompiledUnderLock() {
    sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(&watch));
    ::close(s_probe);
  }
  CompiledUnderLock(const CompiledUnderLock&) = delete;
  CompiledUnderLock& operator=(const CompiledUnderLock&) = delete;

  int count() const { return s_count; }
  void clear() { s_count = 0; }

private:
  static int watch(sqlite3* db, char**, const sqlite3_api_routines*) {
    sqlite3_set_authorizer(db, authorize, nullptr);
    return SQLITE_OK;
  }
  static int authorize(void*, int, const char*, const char*, const char*, const char*) {
    if (::flock(s_probe, LOCK_EX | LOCK_NB) == 0) {
      ::flock(s_probe, LOCK_UN);
    } else if (errno == EWOULDBLOCK) {
      ++s_count;
    }
    return SQLITE_OK;
  }

  static inline int s_probe = -1;
  static inline int s_count = 0;
};

core::Decision decide(store::sqlite::SqliteStore& store, std::string_view key,
                      core::Algorithm algorithm, core::Limit limit) {
  std::vector<core::Limit> limits{limit};
  return store.decide(key, algorithm, true, limits, {});
}

} // namespace

TEST_CASE(
    "store::sqlite::SqliteStore compiles no SQL under the lock for a decision on a key it holds") {
  TemporaryDatabase database;
  // Made first, so that the lock can be tried on it.
  { store::sqlite::SqliteStore made(database.path(), k_second); }
  CompiledUnderLock compiled(database.path());
  core::Nanos clock = k_start;
  store::sqlite::SqliteStore store(database.path(), k_second, store::Creation::never,
                                   [&clock] { return clock; });
  const core::Limit fast{{1000, k_second}, 1000};
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    std::string key(core::algorithm_name(algorithm));
    CAPTURE(key);
    // The first decision makes the key's row, which only it needs to.
    CHECK(decide(store, key, algorithm, fast).allowed);
    // The leaky bucket grants one interval (a millisecond) apart.
    clock += 2 * core::k_nanos_per_milli;
    compiled.clear();
    CHECK(decide(store, key, algorithm, fast).allowed);
    CHECK(compiled.count() == 0);
  }
  // A denial, which counts in the key's row.
  const core::Limit hourly{{1, 3600 * k_second}, 1};
  CHECK(decide(store, "denied", core::Algorithm::token_bucket, hourly).allowed);
  compiled.clear();
  CHECK_FALSE(decide(store, "denied", core::Algorithm::token_bucket, hourly).allowed);
  CHECK(compiled.count() == 0);
  // The probe works: a statement compiled under the lock is seen.
  store.reset(std::vector<std::string>{"denied"}, false);
  CHECK(compiled.count() > 0);
}
