#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// 10/min: calendar minutes (k_t0 is a whole hour).
TestKey fixed() {
  return TestKey(Algorithm::fixed_window, {limit_of(10, k_min)});
}

int grant_all(TestKey& key, Nanos now) {
  int granted = 0;
  while (key.attempt(now).allowed) {
    ++granted;
  }
  return granted;
}

} // namespace

TEST_CASE("core::fixed_window admits N + N across a boundary") {
  TestKey key = fixed();
  // N at 54 s, then at 66 s: 20 grants within 12 s, as the algorithm defines.
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  CHECK(grant_all(key, k_t0 + 66 * k_s) == 10);
  // The same at the very edge: the last nanosecond of one window and the first of the next.
  TestKey edge = fixed();
  CHECK(grant_all(edge, k_t0 + k_min - 1) == 10);
  CHECK(grant_all(edge, k_t0 + k_min) == 10);
}

TEST_CASE("core::fixed_window windows are aligned to the epoch") {
  TestKey key = fixed();
  Decision first = key.attempt(k_t0 + 30 * k_s);
  CHECK(first.reset_after == 30 * k_s); // the window ends at the next whole minute
  CHECK(first.remaining == 9);
  for (int i = 0; i < 9; ++i) {
    REQUIRE(key.attempt(k_t0 + 40 * k_s).allowed);
  }
  Decision denied = key.attempt(k_t0 + 45 * k_s);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 15 * k_s);
  CHECK(denied.remaining == 0);
  CHECK(denied.reset_after == 15 * k_s);
  // 10/90s: windows are multiples of 90 s since the epoch, not since the first request.
  TestKey odd(Algorithm::fixed_window, {limit_of(1, 90 * k_s)});
  Nanos start = (k_t0 / (90 * k_s)) * 90 * k_s;
  CHECK(odd.attempt(start + 89 * k_s).allowed);
  CHECK(odd.attempt(start + 90 * k_s).allowed);
  CHECK(odd.attempt(start + 90 * k_s).wait == 90 * k_s);
}

TEST_CASE("core::fixed_window counts cost and grants when count + cost <= N") {
  TestKey key = fixed();
  CHECK(key.attempt(k_t0, 7).allowed);
  Decision denied = key.attempt(k_t0, 4);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.remaining == 3);
  CHECK(denied.wait == k_min);
  CHECK(key.attempt(k_t0, 3).allowed);
  CHECK_FALSE(key.attempt(k_t0, 1).allowed);
}

TEST_CASE("core::fixed_window wait reserves in the first window with room, in order") {
  TestKey key = fixed();
  CHECK(grant_all(key, k_t0 + 10 * k_s) == 10);
  Nanos previous = k_t0;
  for (int i = 0; i < 10; ++i) {
    Decision decision = key.reserve(k_t0 + 20 * k_s);
    REQUIRE(decision.allowed);
    CHECK(decision.grant.at == k_t0 + k_min); // sleeps until the window starts
    CHECK(decision.wait == 40 * k_s);
    CHECK(decision.grant.at >= previous);
    previous = decision.grant.at;
  }
  Decision later = key.reserve(k_t0 + 20 * k_s, 3);
  CHECK(later.grant.at == k_t0 + 2 * k_min);
  // A try cannot take what waiters hold, nor squeeze into the full current window.
  Decision denied = key.attempt(k_t0 + 30 * k_s);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.remaining == 0);
  CHECK(denied.reset_after == 2 * k_min + k_min - 30 * k_s);
  // The reservation in the third window leaves 7 there.
  CHECK(key.standing(k_t0 + 2 * k_min).remaining == 7);
}

TEST_CASE("core::fixed_window cancel returns a reservation to its window") {
  TestKey key = fixed();
  CHECK(grant_all(key, k_t0) == 10);
  Decision a = key.reserve(k_t0, 4);
  Decision b = key.reserve(k_t0, 6);
  REQUIRE(a.grant.at == k_t0 + k_min);
  REQUIRE(b.grant.at == k_t0 + k_min);
  key.cancel(k_t0 + k_s, b);
  // The next window has 6 free again.
  Decision c = key.reserve(k_t0 + k_s, 6);
  CHECK(c.grant.at == k_t0 + k_min);
  Decision d = key.reserve(k_t0 + k_s);
  CHECK(d.grant.at == k_t0 + 2 * k_min);
  // Cancelling in a window that is no longer the latest returns nothing: its count is gone.
  key.cancel(k_t0 + 2 * k_s, a);
  CHECK(key.reserve(k_t0 + 2 * k_s, 10).grant.at == k_t0 + 3 * k_min);
}

TEST_CASE("core::fixed_window a full window stays full once waiters give back") {
  TestKey key = fixed();
  CHECK(grant_all(key, k_t0) == 10);
  Decision waiter = key.reserve(k_t0);
  key.cancel(k_t0 + k_s, waiter);
  // The current window's count was replaced by the next one's: it is still full.
  Decision denied = key.attempt(k_t0 + 2 * k_s);
  CHECK_FALSE(denied.allowed);
  CHECK(key.standing(k_t0 + 2 * k_s).remaining == 0);
  CHECK_FALSE(key.fresh(k_t0 + 2 * k_s));
  CHECK(key.fresh(k_t0 + 2 * k_min));
  CHECK(grant_all(key, k_t0 + k_min) == 10);
}

TEST_CASE("core::fixed_window a key's clock never runs backwards") {
  TestKey key = fixed();
  CHECK(grant_all(key, k_t0 + k_min) == 10);
  // The clock steps back into the previous window: it is still the later one.
  Decision stepped = key.attempt(k_t0 + 30 * k_s);
  CHECK_FALSE(stepped.allowed);
  CHECK(stepped.now == k_t0 + k_min);
  CHECK(stepped.wait == k_min);
}
