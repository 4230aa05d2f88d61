#include "core/bounds.hpp"
#include "core/decide.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

constexpr Algorithm k_algorithms[] = {Algorithm::token_bucket, Algorithm::leaky_bucket,
                                      Algorithm::fixed_window, Algorithm::sliding_window,
                                      Algorithm::sliding_log};

} // namespace

TEST_CASE("core::pause holds a try on every algorithm until it ends") {
  for (Algorithm algorithm : k_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(10, k_s)});
    REQUIRE(key.attempt(k_t0).allowed);
    CHECK(pause(key.state(), k_t0 + 100 * k_ms, 2 * k_s) == k_t0 + 2100 * k_ms);
    Decision denied = key.attempt(k_t0 + 500 * k_ms);
    CHECK_FALSE(denied.allowed);
    CHECK(denied.refusal == Refusal::later);
    CHECK(denied.wait == 1600 * k_ms);
    CHECK(denied.paused_until == k_t0 + 2100 * k_ms);
    CHECK(denied.remaining == 0);
    CHECK(denied.reset_after >= 1600 * k_ms);
    // The limit alone would grant: it says so for itself.
    CHECK(denied.limits[0].retry_after == 0);
    Decision granted = key.attempt(k_t0 + 2100 * k_ms);
    CHECK(granted.allowed);
    CHECK(granted.paused_until == 0);
  }
}

TEST_CASE("core::pause puts a reservation's slot at its end, within the caller's wait") {
  for (Algorithm algorithm : k_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(10, k_s)});
    pause(key.state(), k_t0, 3 * k_s);
    Decision refused = key.reserve(k_t0, 1, 2 * k_s);
    CHECK_FALSE(refused.allowed);
    CHECK(refused.refusal == Refusal::timeout);
    CHECK(refused.wait == 3 * k_s);
    Decision waiter = key.reserve(k_t0 + k_s);
    REQUIRE(waiter.allowed);
    CHECK(waiter.grant.at == k_t0 + 3 * k_s);
    CHECK(waiter.wait == 2 * k_s);
    // The next one is placed by the limit after it, not at the pause's end again.
    Decision next = key.reserve(k_t0 + k_s);
    REQUIRE(next.allowed);
    CHECK(next.grant.at >= k_t0 + 3 * k_s);
  }
}

TEST_CASE("core::pause consumes nothing: the limit's quota is whole when it ends") {
  TestKey key(Algorithm::token_bucket, {limit_of(5, k_min)});
  REQUIRE(key.attempt(k_t0).allowed);
  pause(key.state(), k_t0, 10 * k_s);
  for (int i = 0; i < 3; ++i) {
    CHECK_FALSE(key.attempt(k_t0 + i * k_s).allowed);
  }
  // 12 s after the grant: 4 left, and one more refilled.
  Decision standing = key.standing(k_t0 + 10 * k_s);
  CHECK(standing.paused_until == 0);
  CHECK(standing.remaining == 4);
}

TEST_CASE("core::pause extends a running pause and never shortens it") {
  KeyState state;
  CHECK(pause(state, k_t0, 5 * k_s) == k_t0 + 5 * k_s);
  CHECK(pause(state, k_t0 + k_s, k_s) == k_t0 + 5 * k_s);
  CHECK(pause(state, k_t0 + 2 * k_s, 10 * k_s) == k_t0 + 12 * k_s);
  CHECK(state.clock == k_t0 + 2 * k_s);
  // From the key's clock when the system clock stepped back.
  CHECK(pause(state, k_t0, 11 * k_s) == k_t0 + 13 * k_s);
  // Never past the latest time counted.
  CHECK(pause(state, k_t0, k_max_time) == k_max_time);
  CHECK(within_bounds(state));
}

TEST_CASE("core::inspect and is_fresh see a pause, also on a key that holds only a pause") {
  KeyState state;
  pause(state, k_t0, 2 * k_s);
  MemoryGrantLog log;
  Decision standing = inspect(state, log, k_t0 + 500 * k_ms);
  CHECK_FALSE(standing.allowed);
  CHECK(standing.wait == 1500 * k_ms);
  CHECK(standing.reset_after == 1500 * k_ms);
  CHECK(standing.remaining == 0);
  CHECK(standing.paused_until == k_t0 + 2 * k_s);
  CHECK_FALSE(is_fresh(state, log, k_t0 + 1999 * k_ms));
  CHECK(is_fresh(state, log, k_t0 + 2 * k_s));
  Decision after = inspect(state, log, k_t0 + 2 * k_s);
  CHECK(after.allowed);
  CHECK(after.reset_after == 0);

  // A fresh key otherwise is not fresh while paused.
  TestKey key(Algorithm::sliding_window, {limit_of(10, k_s)});
  pause(key.state(), k_t0, k_min);
  CHECK_FALSE(key.fresh(k_t0 + k_s));
  CHECK(key.fresh(k_t0 + k_min));
}

TEST_CASE("core::decide on a key that holds only a pause takes the limits of the call") {
  for (Algorithm algorithm : k_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(2, k_s)});
    pause(key.state(), k_t0, k_s);
    Decision denied = key.attempt(k_t0);
    CHECK_FALSE(denied.allowed);
    CHECK(key.state().limits.size() == 1);
    CHECK(key.state().paused_until == k_t0 + k_s);
    CHECK(key.attempt(k_t0 + k_s).allowed);
    CHECK(key.state().limits[0].limit == limit_of(2, k_s));
  }
}

TEST_CASE("core::decide: a leaky bucket's queue fills from the end of a pause, not from now") {
  TestKey key(Algorithm::leaky_bucket, {limit_of(10, k_s, 3)});
  pause(key.state(), k_t0, 5 * k_s);
  // One leaves at the pause's end and three wait behind it, one interval apart; the fifth
  // overflows the queue.
  for (int i = 0; i < 4; ++i) {
    Decision waiter = key.reserve(k_t0 + k_s);
    REQUIRE(waiter.allowed);
    CHECK(waiter.grant.at == k_t0 + 5 * k_s + i * 100 * k_ms);
  }
  Decision full = key.reserve(k_t0 + k_s);
  CHECK_FALSE(full.allowed);
  CHECK(full.refusal == Refusal::full);
}
