// The pause of a SqliteStore as a waiter that wakes sees it: serialised with `pause`.
#include "store/sqlite/sqlite_store.hpp"

#include "temporary_database.hpp"
#include "util/clock.hpp"

#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <thread>

using namespace ratelimit;
using core::Nanos;

namespace {

constexpr Nanos k_second = core::k_nanos_per_second;

} // namespace

// `pause` reads its clock inside its transaction, and the pause is in force from then on; a
// waiter that wakes after that instant must see it, even before the pause commits. Here the
// pausing process stalls between reading its clock and committing (a slow disk, a loaded
// machine, a SIGSTOP) while a waiter on another connection checks the key: it must wait for
// the commit and find the pause, not read the snapshot from before it.
TEST_CASE(
    "store::sqlite::SqliteStore::pause_of sees a pause that read its clock before the check") {
  test::TemporaryDatabase file;
  store::sqlite::SqliteStore waiter(file.path(), 10 * k_second);
  std::atomic<bool> armed = false;
  std::atomic<Nanos> checked_at = 0;
  store::PauseStanding seen;
  std::thread check;
  store::sqlite::SqliteStore pausing(file.path(), 10 * k_second, store::Creation::if_missing, [&] {
    Nanos now = util::realtime_nanos();
    if (armed.exchange(false)) {
      // The pause's start is `now`: a waiter that checks from here on is inside the pause.
      check = std::thread([&] {
        checked_at = util::realtime_nanos();
        seen = waiter.pause_of("k");
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return now;
  });
  pausing.decide("k", core::Algorithm::token_bucket, true,
                 std::vector<core::Limit>{{{10, k_second}, 10}}, core::Request{});
  armed = true;
  store::PauseStanding pause = pausing.pause("k", 60 * k_second);
  check.join();
  REQUIRE(checked_at.load() >= pause.now);
  CHECK(seen.paused_until == pause.paused_until);
  CHECK(seen.now >= pause.now);
}

TEST_CASE("store::sqlite::SqliteStore::pause_of: no pause, a pause, a pause that ended") {
  test::TemporaryDatabase file;
  Nanos now = 1'700'000'000 * k_second;
  store::sqlite::SqliteStore db(file.path(), 10 * k_second, store::Creation::if_missing,
                                [&] { return now; });
  CHECK(db.pause_of("k").paused_until == 0);
  CHECK(db.pause("k", 2 * k_second).paused_until == now + 2 * k_second);
  now += k_second;
  CHECK(db.pause_of("k").paused_until == now + k_second);
  CHECK(db.pause_of("k").now == now);
  now += k_second;
  CHECK(db.pause_of("k").paused_until == 0);
}
