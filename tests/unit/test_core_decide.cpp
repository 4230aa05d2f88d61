#include "core/decide.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

TEST_CASE("core::decide several limits: a grant needs every limit, the binding one is named") {
  // 5/s and 20/min as token buckets: 5 a second for 4 seconds empties the minute's bucket.
  TestKey key(Algorithm::token_bucket, {limit_of(5, k_s), limit_of(20, k_min)});
  for (int second = 0; second < 4; ++second) {
    for (int i = 0; i < 5; ++i) {
      REQUIRE(key.attempt(k_t0 + second * k_s).allowed);
    }
    Decision denied = key.attempt(k_t0 + second * k_s);
    CHECK_FALSE(denied.allowed);
    CHECK(denied.binding == 0);
    CHECK(denied.wait == 200 * k_ms);
    CHECK(denied.limits[0].retry_after == 200 * k_ms);
  }
  // 4 s after the first grant the minute's bucket has refilled 1 token (one per 3 s), 1.33.
  CHECK(key.attempt(k_t0 + 4 * k_s).allowed);
  Decision denied = key.attempt(k_t0 + 4 * k_s);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.binding == 1);
  CHECK(denied.wait == 2 * k_s);
  CHECK(denied.limits[0].retry_after == 0);
  CHECK(denied.limits[1].retry_after == 2 * k_s);
  CHECK(denied.limits[0].remaining == 4);
  CHECK(denied.limits[1].remaining == 0);
  CHECK(denied.remaining == 0);
  // The refusal took nothing from the per-second limit.
  CHECK(key.standing(k_t0 + 4 * k_s).limits[0].remaining == 4);
}

TEST_CASE("core::decide several limits: wait sleeps until all admit and reserves in all") {
  TestKey key(Algorithm::token_bucket, {limit_of(5, k_s), limit_of(20, k_min)});
  for (int i = 0; i < 20; ++i) {
    REQUIRE(key.attempt(k_t0 + (i / 5) * k_s).allowed);
  }
  REQUIRE(key.attempt(k_t0 + 4 * k_s).allowed);
  // The minute's bucket is empty until 6 s; the per-second one would admit at 4 s.
  Decision waiter = key.reserve(k_t0 + 4 * k_s);
  REQUIRE(waiter.allowed);
  CHECK(waiter.grant.at == k_t0 + 6 * k_s);
  CHECK(waiter.binding == 1);
  CHECK(waiter.wait == 2 * k_s);
  // Both limits took it at 6 s: the per-second bucket holds 4 then.
  Decision standing = key.standing(k_t0 + 6 * k_s);
  CHECK(standing.limits[0].remaining == 4);
  CHECK(standing.limits[1].remaining == 0);
  // Given back, both return it.
  key.cancel(k_t0 + 4 * k_s, waiter);
  standing = key.standing(k_t0 + 6 * k_s);
  CHECK(standing.limits[0].remaining == 5);
  CHECK(standing.limits[1].remaining == 1);
}

TEST_CASE("core::decide several limits: a grant made at once names the limit with least left") {
  TestKey key(Algorithm::sliding_log, {limit_of(5, k_s), limit_of(6, k_min)});
  Decision first = key.attempt(k_t0);
  CHECK(first.allowed);
  CHECK(first.binding == 0); // 4 left of 5/s, 5 of 6/min
  CHECK(first.remaining == 4);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(key.attempt(k_t0 + k_s + i).allowed);
  }
  Decision sixth = key.attempt(k_t0 + 2 * k_s);
  CHECK(sixth.allowed);
  CHECK(sixth.binding == 1); // 1 left of 5/s, 0 of 6/min
  CHECK(sixth.remaining == 0);
  CHECK(sixth.limits[0].remaining == 1);
  CHECK(sixth.limits[1].reset_after == k_min);
}

TEST_CASE("core::decide several limits apply all or nothing for every algorithm") {
  // Tries every 100 ms for 10 s under 5/s and 8/min; the 5/s limit alone would admit 50
  // (token-bucket, windows) or 50 spaced 200 ms apart (leaky-bucket).
  struct Case {
    Algorithm algorithm;
    int expected;
  };
  const Case cases[] = {
      {Algorithm::token_bucket, 9},   // 8 at once, the 9th token of 8/min comes at 7.5 s
      {Algorithm::leaky_bucket, 2},   // one per 7.5 s
      {Algorithm::fixed_window, 8},   // one calendar minute
      {Algorithm::sliding_window, 8}, // no previous minute
      {Algorithm::sliding_log, 8},
  };
  for (const Case& c : cases) {
    const Algorithm algorithm = c.algorithm;
    const int expected = c.expected;
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(5, k_s), limit_of(8, k_min)});
    int granted = 0;
    for (int i = 0; i < 100; ++i) {
      std::vector<LimitState> before = key.state().limits;
      Decision decision = key.attempt(k_t0 + i * 100 * k_ms);
      if (decision.allowed) {
        ++granted;
        REQUIRE(key.state().limits.size() == 2);
        for (std::size_t j = 0; j < before.size(); ++j) {
          CHECK(key.state().limits[j] != before[j]);
        }
      } else {
        CHECK(key.state().limits == before);
        CHECK(decision.wait > 0);
        CHECK(decision.limits[decision.binding].retry_after == decision.wait);
      }
    }
    CHECK(granted == expected);
  }
}

TEST_CASE("core::decide several limits: a reservation is refused when any limit refuses it") {
  // The leaky bucket's queue of 1 overflows while the per-minute limit has room.
  TestKey key(Algorithm::leaky_bucket, {limit_of(5, k_s, 1), limit_of(100, k_min)});
  CHECK(key.attempt(k_t0).allowed);
  CHECK(key.reserve(k_t0).allowed);
  std::vector<LimitState> before = key.state().limits;
  Decision dropped = key.reserve(k_t0);
  CHECK_FALSE(dropped.allowed);
  CHECK(dropped.binding == 0);
  CHECK(key.state().limits == before);
}

TEST_CASE("core::decide keeps the limits of the last call, not those it no longer names") {
  std::vector<Limit> both{limit_of(5, k_s), limit_of(3, k_min)};
  std::vector<Limit> per_second{limit_of(5, k_s)};
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    // The leaky bucket spaces 3/min 20 s apart; the others take 3 at once.
    bool leaky = algorithm == Algorithm::leaky_bucket;
    Nanos step = leaky ? 20 * k_s : 0;
    TestKey key(algorithm, both);
    for (int i = 0; i < 3; ++i) {
      REQUIRE(key.attempt(k_t0 + i * step).allowed);
    }
    Nanos later = k_t0 + 2 * step + 5 * k_s;
    key.limits() = per_second;
    CHECK(key.attempt(later).allowed);
    REQUIRE(key.state().limits.size() == 1);
    CHECK(key.state().limits[0].limit == per_second[0]);
    if (algorithm == Algorithm::sliding_log) {
      // The one log still holds the minute's 4 grants.
      key.limits() = both;
      Decision denied = key.attempt(later + 5 * k_s);
      CHECK_FALSE(denied.allowed);
      CHECK(denied.binding == 1);
    }
  }
}

TEST_CASE("core::decide a key's clock never runs backwards, for every algorithm") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(1, k_min)});
    REQUIRE(key.attempt(k_t0 + 30 * k_s).allowed);
    // An hour back, every algorithm would see a fresh key.
    Decision stepped = key.attempt(k_t0 - 3600 * k_s);
    CHECK_FALSE(stepped.allowed);
    CHECK(stepped.now == k_t0 + 30 * k_s);
    CHECK(key.state().clock == k_t0 + 30 * k_s);
    Decision waiter = key.reserve(k_t0 - 3600 * k_s);
    CHECK(waiter.grant.at >= k_t0 + 60 * k_s);
    key.cancel(k_t0, waiter);
    CHECK(key.state().clock == k_t0 + 30 * k_s);
    CHECK_FALSE(key.fresh(k_t0 + 31 * k_s));
  }
}

TEST_CASE("core::decide a try is granted only now, a wait within its longest wait") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(1, k_s)});
    REQUIRE(key.attempt(k_t0).allowed);
    // The sliding window's estimate counts the first grant in full at 1 s, and half of it
    // at 1.5 s: the second fits at 2 s.
    Nanos wait = algorithm == Algorithm::sliding_window ? 1500 * k_ms : 500 * k_ms;
    Decision denied = key.attempt(k_t0 + 500 * k_ms);
    CHECK_FALSE(denied.allowed);
    CHECK(denied.wait == wait);
    CHECK_FALSE(key.reserve(k_t0 + 500 * k_ms, 1, wait - 1).allowed);
    Decision waiter = key.reserve(k_t0 + 500 * k_ms, 1, wait);
    CHECK(waiter.allowed);
    CHECK(waiter.wait == wait);
    CHECK(waiter.grant.at == k_t0 + 500 * k_ms + wait);
    CHECK(waiter.grant.cost == 1);
    CHECK(waiter.grant.markers.size() == 1);
  }
}

TEST_CASE("core::decide a fresh key is fresh") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(3, k_s)});
    CHECK(key.fresh(k_t0));
    Decision first = key.attempt(k_t0);
    CHECK(first.reset_after > 0);
    CHECK(first.reset_after <= 2 * k_s);
    CHECK_FALSE(key.fresh(k_t0));
    CHECK(key.fresh(k_t0 + 2 * k_s));
  }
}
