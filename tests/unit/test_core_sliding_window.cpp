#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// 10/min: the counts of calendar minutes (k_t0 is a whole hour).
TestKey sliding() {
  return TestKey(Algorithm::sliding_window, {limit_of(10, k_min)});
}

int grant_all(TestKey& key, Nanos now, std::int64_t cost = 1) {
  int granted = 0;
  while (key.attempt(now, cost).allowed) {
    ++granted;
  }
  return granted;
}

} // namespace

TEST_CASE("core::sliding_window admits between fixed-window and sliding-log across a boundary") {
  TestKey key = sliding();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  // 6 s into the next minute the previous one still weighs 54/60: 10 * 0.9 = 9, room for 1
  // (fixed-window would admit 10 here, sliding-log 0).
  CHECK(grant_all(key, k_t0 + 66 * k_s) == 1);
  // Half way: 10 * 0.5 + 1 = 6, room for 4 more.
  CHECK(grant_all(key, k_t0 + 90 * k_s) == 4);
  // At the very edge the previous minute weighs all of it.
  TestKey edge = sliding();
  CHECK(grant_all(edge, k_t0 + k_min - 1) == 10);
  CHECK(grant_all(edge, k_t0 + k_min) == 0);
}

TEST_CASE("core::sliding_window an estimate of 4.67 leaves room for 5, not 6") {
  TestKey key = sliding();
  for (int i = 0; i < 7; ++i) {
    REQUIRE(key.attempt(k_t0 + 10 * k_s).allowed);
  }
  // 20 s into the next minute: 7 * 40/60 = 4.67. Rounding it down to 4 would admit a 6th.
  CHECK(key.standing(k_t0 + 80 * k_s).remaining == 5);
  CHECK(grant_all(key, k_t0 + 80 * k_s) == 5);
  CHECK(key.standing(k_t0 + 80 * k_s).remaining == 0);
  // The 6th fits when 7 * (60 - e)/60 <= 4, at e = 180/7 s, rounded up to the nanosecond.
  Decision denied = key.attempt(k_t0 + 80 * k_s);
  CHECK(denied.wait == 25'714'285'715 - 20 * k_s);
  CHECK_FALSE(key.attempt(k_t0 + 60 * k_s + 25'714'285'714).allowed);
  CHECK(key.attempt(k_t0 + 60 * k_s + 25'714'285'715).allowed);
}

TEST_CASE("core::sliding_window counts cost") {
  TestKey key = sliding();
  CHECK(key.attempt(k_t0, 7).allowed);
  Decision denied = key.attempt(k_t0, 4);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.remaining == 3);
  CHECK(key.attempt(k_t0, 3).allowed);
  // Next minute, 30 s in: 10 * 0.5 = 5 left for one request of 5, not 6.
  CHECK_FALSE(key.attempt(k_t0 + 90 * k_s, 6).allowed);
  CHECK(key.attempt(k_t0 + 90 * k_s, 5).allowed);
}

TEST_CASE("core::sliding_window wait reserves the earliest time the estimate admits, in order") {
  TestKey key = sliding();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  // The k-th waiter fits when 10 * (60 - e)/60 + k <= 10: e = 6k s.
  for (int k = 1; k <= 9; ++k) {
    Decision decision = key.reserve(k_t0 + k_min);
    REQUIRE(decision.allowed);
    CHECK(decision.grant.at == k_t0 + k_min + k * 6 * k_s);
  }
  // The 10th fills this minute only at its end: the start of the next, where the 9 weigh
  // all of theirs.
  Decision tenth = key.reserve(k_t0 + k_min);
  CHECK(tenth.grant.at == k_t0 + 2 * k_min);
  Decision eleventh = key.reserve(k_t0 + k_min);
  // There the 9 weigh 9 * (60 - e)/60: 1 + 1 more fit at e = 60 - 480/9 s, rounded up.
  CHECK(eleventh.grant.at == k_t0 + 2 * k_min + 6'666'666'667);
  // While a later minute holds reservations, a try now gets nothing.
  Decision denied = key.attempt(k_t0 + 119 * k_s);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.remaining == 0);
}

TEST_CASE("core::sliding_window cancel gives back to the window that counted it") {
  TestKey key = sliding();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  Decision a = key.reserve(k_t0 + k_min);
  Decision b = key.reserve(k_t0 + k_min);
  REQUIRE(a.grant.at == k_t0 + k_min + 6 * k_s);
  REQUIRE(b.grant.at == k_t0 + k_min + 12 * k_s);
  key.cancel(k_t0 + k_min + k_s, b);
  CHECK(key.reserve(k_t0 + k_min + k_s).grant.at == k_t0 + k_min + 12 * k_s);
}

TEST_CASE("core::sliding_window cancel reaches a reservation now counted as the previous window") {
  TestKey key = sliding();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  // 3 fit in the next minute once 10 * (60 - e)/60 <= 7: at 18 s.
  Decision waiter = key.reserve(k_t0 + 55 * k_s, 3);
  REQUIRE(waiter.grant.at == k_t0 + 78 * k_s);
  // Cost 7 fits only from the minute after, where the waiter is the previous count: 3 + 7.
  Decision big = key.reserve(k_t0 + 80 * k_s, 7);
  REQUIRE(big.grant.at == k_t0 + 2 * k_min);
  CHECK(key.standing(k_t0 + 150 * k_s).remaining == 1); // 7 + 3 * 0.5 = 8.5
  key.cancel(k_t0 + 81 * k_s, waiter);
  // Without the waiter that minute holds the 7 alone: 3 left, from its start.
  CHECK(key.standing(k_t0 + 2 * k_min).remaining == 3);
  CHECK(key.standing(k_t0 + 150 * k_s).remaining == 3);
  CHECK(key.reserve(k_t0 + 81 * k_s, 3).grant.at == k_t0 + 2 * k_min);
  CHECK(key.reserve(k_t0 + 81 * k_s, 1).grant.at == k_t0 + 3 * k_min + 6 * k_s);
}

TEST_CASE("core::sliding_window reports the estimate's room and when the counts stop mattering") {
  TestKey key = sliding();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  Decision standing = key.standing(k_t0 + 66 * k_s);
  CHECK(standing.remaining == 1);
  CHECK(standing.reset_after == 54 * k_s); // the previous minute weighs nothing at 120 s
  Decision granted = key.attempt(k_t0 + 66 * k_s);
  CHECK(granted.remaining == 0);
  CHECK(granted.reset_after == 114 * k_s); // this minute's count weighs until 180 s
  CHECK_FALSE(key.fresh(k_t0 + 180 * k_s - 1));
  CHECK(key.fresh(k_t0 + 180 * k_s));
}

TEST_CASE("core::sliding_window a key's clock never runs backwards") {
  TestKey key = sliding();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  CHECK(grant_all(key, k_t0 + 90 * k_s) == 5);
  // Back into the previous minute, where it would look as if only the 10 counted.
  Decision stepped = key.attempt(k_t0 + 30 * k_s);
  CHECK_FALSE(stepped.allowed);
  CHECK(stepped.now == k_t0 + 90 * k_s);
}

TEST_CASE("core::sliding_window with a large count grants in the next window at once") {
  // room * PERIOD / prev used to overflow int64 for a million a day after one grant.
  TestKey key(Algorithm::sliding_window, {limit_of(1'000'000, 24 * 60 * k_min)});
  CHECK(key.attempt(k_t0, 1).allowed);
  Decision next_day = key.attempt(k_t0 + 24 * 60 * k_min + k_s, 1);
  CHECK(next_day.allowed);
  CHECK(next_day.wait == 0);
}
