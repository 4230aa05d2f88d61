#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// 10/s: one token every 100 ms, a bucket of `burst` (default 10).
TestKey bucket(std::int64_t burst = 10) {
  return TestKey(Algorithm::token_bucket, {limit_of(10, k_s, burst)});
}

} // namespace

TEST_CASE("core::token_bucket grants a full burst at once, then one per interval") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    Decision decision = key.attempt(k_t0);
    REQUIRE(decision.allowed);
    CHECK(decision.wait == 0);
    CHECK(decision.remaining == 9 - i);
  }
  Decision denied = key.attempt(k_t0);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 100 * k_ms);
  CHECK(denied.remaining == 0);
  CHECK(denied.reset_after == k_s);
  CHECK_FALSE(key.attempt(k_t0 + 100 * k_ms - 1).allowed);
  CHECK(key.attempt(k_t0 + 100 * k_ms).allowed);
  CHECK_FALSE(key.attempt(k_t0 + 100 * k_ms).allowed);
}

TEST_CASE("core::token_bucket refills at the rate, up to the burst") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  // 250 ms later: two whole tokens, the third 50 ms away.
  CHECK(key.attempt(k_t0 + 250 * k_ms).allowed);
  CHECK(key.attempt(k_t0 + 250 * k_ms).allowed);
  Decision denied = key.attempt(k_t0 + 250 * k_ms);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 50 * k_ms);
  // After an hour the bucket holds its burst, not more.
  Nanos later = k_t0 + 3600 * k_s;
  CHECK(key.standing(later).remaining == 10);
  CHECK(key.standing(later).reset_after == 0);
  CHECK(key.fresh(later));
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(later).allowed);
  }
  CHECK_FALSE(key.attempt(later).allowed);
}

TEST_CASE("core::token_bucket burst may differ from the rate") {
  TestKey big = bucket(25);
  for (int i = 0; i < 25; ++i) {
    REQUIRE(big.attempt(k_t0).allowed);
  }
  CHECK_FALSE(big.attempt(k_t0).allowed);

  TestKey small = bucket(1);
  CHECK(small.attempt(k_t0).allowed);
  Decision denied = small.attempt(k_t0 + 50 * k_ms);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 50 * k_ms);
  CHECK(small.attempt(k_t0 + 100 * k_ms).allowed);
}

TEST_CASE("core::token_bucket reports remaining tokens and the time until full") {
  TestKey key = bucket();
  key.attempt(k_t0);
  key.attempt(k_t0);
  Decision third = key.attempt(k_t0);
  CHECK(third.remaining == 7);
  CHECK(third.reset_after == 300 * k_ms);
  // 150 ms later one token is back and half of another: 8 whole tokens, full in 150 ms.
  Decision standing = key.standing(k_t0 + 150 * k_ms);
  CHECK(standing.remaining == 8);
  CHECK(standing.reset_after == 150 * k_ms);
  CHECK_FALSE(key.fresh(k_t0 + 150 * k_ms));
  CHECK(key.fresh(k_t0 + 300 * k_ms));
}

TEST_CASE("core::token_bucket takes the cost in tokens") {
  TestKey key = bucket();
  CHECK(key.attempt(k_t0, 4).allowed);
  CHECK(key.attempt(k_t0, 4).allowed);
  Decision denied = key.attempt(k_t0, 4);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.remaining == 2);
  CHECK(denied.wait == 200 * k_ms); // two more tokens
  CHECK(key.attempt(k_t0, 2).allowed);
  CHECK_FALSE(key.attempt(k_t0, 1).allowed);
  // A cost of the whole burst needs a full bucket.
  Decision whole = key.reserve(k_t0, 10);
  CHECK(whole.allowed);
  CHECK(whole.wait == k_s);
}

TEST_CASE("core::token_bucket reservations go into debt, in order") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  Nanos previous = k_t0;
  for (int i = 1; i <= 5; ++i) {
    Decision decision = key.reserve(k_t0 + i * k_ms);
    REQUIRE(decision.allowed);
    CHECK(decision.grant.at == k_t0 + i * 100 * k_ms);
    CHECK(decision.wait == i * 100 * k_ms - i * k_ms);
    CHECK(decision.grant.at > previous);
    previous = decision.grant.at;
    CHECK(decision.remaining == 0);
  }
  // The slots up to 500 ms belong to the waiters: a try cannot take them.
  Decision denied = key.attempt(k_t0 + 150 * k_ms);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 450 * k_ms);
  CHECK(denied.reset_after == 1350 * k_ms);
  CHECK(key.attempt(k_t0 + 600 * k_ms).allowed);
}

TEST_CASE("core::token_bucket refuses a reservation beyond the longest wait") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  Decision refused = key.reserve(k_t0, 1, 99 * k_ms);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.wait == 100 * k_ms);
  // Nothing was taken: the next waiter still gets the first slot.
  Decision granted = key.reserve(k_t0, 1, 100 * k_ms);
  CHECK(granted.allowed);
  CHECK(granted.grant.at == k_t0 + 100 * k_ms);
}

TEST_CASE("core::token_bucket cancel returns the last reservation whole") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  Decision waiter = key.reserve(k_t0, 3);
  REQUIRE(waiter.grant.at == k_t0 + 300 * k_ms);
  key.cancel(k_t0 + 10 * k_ms, waiter);
  CHECK(key.standing(k_t0 + 10 * k_ms).reset_after == 990 * k_ms);
  Decision next = key.reserve(k_t0 + 10 * k_ms, 3);
  CHECK(next.grant.at == k_t0 + 300 * k_ms);
  key.cancel(k_t0 + 20 * k_ms, next);
  CHECK(key.attempt(k_t0 + 100 * k_ms).allowed);
}

TEST_CASE("core::token_bucket cancel keeps what later reservations still need") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  Decision first = key.reserve(k_t0);
  Decision second = key.reserve(k_t0);
  REQUIRE(first.grant.at == k_t0 + 100 * k_ms);
  REQUIRE(second.grant.at == k_t0 + 200 * k_ms);
  // The second waiter stands 100 ms after the first: the first's token is not returned
  // so far that the next waiter would go ahead of the second.
  key.cancel(k_t0 + 1, first);
  Decision third = key.reserve(k_t0 + 1);
  CHECK(third.grant.at >= second.grant.at);
  CHECK(third.grant.at <= k_t0 + 300 * k_ms);
}

TEST_CASE("core::token_bucket cancel after later grants returns only what they leave") {
  // 5 per 5 s: a token a second, a bucket of 5.
  TestKey key(Algorithm::token_bucket, {limit_of(5, 5 * k_s)});
  REQUIRE(key.attempt(k_t0, 5).allowed);
  Decision waiter = key.reserve(k_t0, 5);
  REQUIRE(waiter.grant.at == k_t0 + 5 * k_s);
  // The waiter's slot has passed when a try comes at 9.5 s, and only then is it cancelled.
  REQUIRE(key.attempt(k_t0 + 9500 * k_ms, 1).allowed);
  key.cancel(k_t0 + 9500 * k_ms, waiter);
  // Standing: 5 at 0 s and 1 at 9.5 s. Five more at 9.5 s would make 6 at one instant;
  // the earliest is 10.5 s, when [9.5 s, 10.5 s] holds 5 + 1 second of refill.
  Decision denied = key.attempt(k_t0 + 9500 * k_ms, 5);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == k_s);
  CHECK(key.reserve(k_t0 + 9500 * k_ms, 5).grant.at == k_t0 + 10500 * k_ms);
}

TEST_CASE("core::token_bucket a key's clock never runs backwards") {
  TestKey key = bucket();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  // The system clock steps back 10 s: the key still counts from t0.
  Decision stepped = key.attempt(k_t0 - 10 * k_s);
  CHECK_FALSE(stepped.allowed);
  CHECK(stepped.now == k_t0);
  CHECK(stepped.wait == 100 * k_ms);
  Decision waiter = key.reserve(k_t0 - 10 * k_s);
  CHECK(waiter.grant.at == k_t0 + 100 * k_ms);
  CHECK(key.state().clock == k_t0);
  CHECK(key.attempt(k_t0 + 200 * k_ms).allowed);
  CHECK(key.state().clock == k_t0 + 200 * k_ms);
}
