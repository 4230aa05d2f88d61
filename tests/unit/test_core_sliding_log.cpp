#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

TestKey log_key(std::int64_t count = 10, Nanos period = k_min) {
  return TestKey(Algorithm::sliding_log, {limit_of(count, period)});
}

int grant_all(TestKey& key, Nanos now) {
  int granted = 0;
  while (key.attempt(now).allowed) {
    ++granted;
  }
  return granted;
}

// A GrantLog that counts the questions asked of it.
class CountingGrantLog final : public GrantLog {
public:
  std::optional<std::int64_t> cumulative_through(Nanos time) override {
    ++calls;
    return inner.cumulative_through(time);
  }
  std::optional<Nanos> time_reaching(std::int64_t cumulative) override {
    ++calls;
    return inner.time_reaching(cumulative);
  }
  std::optional<std::int64_t> cumulative_before(std::int64_t cumulative) override {
    ++calls;
    return inner.cumulative_before(cumulative);
  }
  std::optional<Nanos> last_time() override {
    ++calls;
    return inner.last_time();
  }
  void append(Nanos time, std::int64_t cumulative) override {
    ++calls;
    inner.append(time, cumulative);
  }
  void forget_before(std::int64_t cumulative) override {
    ++calls;
    inner.forget_before(cumulative);
  }
  void remove(std::int64_t cumulative, std::int64_t cost) override {
    ++calls;
    ++removals;
    inner.remove(cumulative, cost);
  }
  void clear() override {
    ++calls;
    inner.clear();
  }

  MemoryGrantLog inner;
  int calls = 0;
  int removals = 0;
};

} // namespace

TEST_CASE("core::sliding_log admits N + 0 across a boundary") {
  TestKey key = log_key();
  CHECK(grant_all(key, k_t0 + 54 * k_s) == 10);
  CHECK(grant_all(key, k_t0 + 66 * k_s) == 0);
  Decision denied = key.attempt(k_t0 + 66 * k_s);
  CHECK(denied.wait == 48 * k_s);
  // The window is (t - PERIOD, t]: the 10 leave it exactly a period after they came.
  CHECK(grant_all(key, k_t0 + 114 * k_s - 1) == 0);
  CHECK(grant_all(key, k_t0 + 114 * k_s) == 10);
}

TEST_CASE("core::sliding_log frees each grant's cost a period after it") {
  TestKey key = log_key();
  for (int i = 0; i < 3; ++i) {
    REQUIRE(key.attempt(k_t0).allowed);
  }
  for (int i = 0; i < 3; ++i) {
    REQUIRE(key.attempt(k_t0 + 10 * k_s).allowed);
  }
  REQUIRE(key.attempt(k_t0 + 20 * k_s, 4).allowed);
  CHECK_FALSE(key.attempt(k_t0 + 59 * k_s).allowed);
  // At 60 s the three from 0 s have left: room for 3, not 4.
  Decision denied = key.attempt(k_t0 + k_min, 4);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.remaining == 3);
  CHECK(denied.wait == 10 * k_s); // the three from 10 s must leave too
  CHECK(key.attempt(k_t0 + k_min, 3).allowed);
  CHECK_FALSE(key.attempt(k_t0 + k_min).allowed);
}

TEST_CASE("core::sliding_log wait reserves the earliest time the window admits, in order") {
  TestKey key = log_key(3);
  REQUIRE(key.attempt(k_t0).allowed);
  REQUIRE(key.attempt(k_t0 + k_s).allowed);
  REQUIRE(key.attempt(k_t0 + 2 * k_s).allowed);
  Nanos previous = 0;
  for (int i = 0; i < 3; ++i) {
    Decision decision = key.reserve(k_t0 + 3 * k_s);
    REQUIRE(decision.allowed);
    CHECK(decision.grant.at == k_t0 + k_min + i * k_s);
    CHECK(decision.grant.at > previous);
    previous = decision.grant.at;
  }
  Decision big = key.reserve(k_t0 + 3 * k_s, 2);
  CHECK(big.grant.at == k_t0 + 2 * k_min + k_s);
}

TEST_CASE("core::sliding_log never grants before the last reservation") {
  // 2/min: one grant at 0 s, then a waiter for 2 reserves at 60 s. A try at 59 s sees only
  // the grant at 0 s in (-1 s, 59 s], yet it would make 3 in the waiter's window (0 s, 60 s].
  TestKey key = log_key(2);
  REQUIRE(key.attempt(k_t0).allowed);
  Decision waiter = key.reserve(k_t0 + 10 * k_s, 2);
  REQUIRE(waiter.grant.at == k_t0 + k_min);
  Decision denied = key.attempt(k_t0 + 59 * k_s);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 61 * k_s); // when the waiter's 2 have left
  CHECK(denied.remaining == 0);
  // Once the waiter gives back, the try fits again.
  key.cancel(k_t0 + 59 * k_s, waiter);
  CHECK(key.attempt(k_t0 + 59 * k_s).allowed);
}

TEST_CASE("core::sliding_log cancel takes the entry out of every window") {
  TestKey key = log_key(3);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(key.attempt(k_t0 + i * k_s).allowed);
  }
  Decision r1 = key.reserve(k_t0 + 3 * k_s);
  Decision r2 = key.reserve(k_t0 + 3 * k_s);
  Decision r3 = key.reserve(k_t0 + 3 * k_s);
  REQUIRE(r1.grant.at == k_t0 + 60 * k_s);
  REQUIRE(r2.grant.at == k_t0 + 61 * k_s);
  REQUIRE(r3.grant.at == k_t0 + 62 * k_s);
  // The last one: its slot is free again.
  key.cancel(k_t0 + 4 * k_s, r3);
  Decision again = key.reserve(k_t0 + 4 * k_s);
  CHECK(again.grant.at == k_t0 + 62 * k_s);
  // One in the middle: later entries stay where they are, and (2 s, 62 s] now holds 2.
  key.cancel(k_t0 + 5 * k_s, r1);
  Decision x = key.reserve(k_t0 + 5 * k_s);
  CHECK(x.grant.at == k_t0 + 62 * k_s);
  // Cancelling the second after the first (its cumulative cost moved) removes it, not the
  // entry after it: (61.5 s, 121.5 s] must still count `again` and `x` at 62 s and one more.
  key.cancel(k_t0 + 6 * k_s, r2);
  Decision y = key.reserve(k_t0 + 6 * k_s);
  CHECK(y.grant.at == k_t0 + 62 * k_s);
  CHECK_FALSE(key.attempt(k_t0 + 121500 * k_ms).allowed);
  CHECK(key.attempt(k_t0 + 122 * k_s).allowed);
}

TEST_CASE("core::sliding_log cancel of grants sharing a time returns each of them") {
  // Grants at one time count in the same windows: cancelling either frees one unit.
  TestKey key = log_key(2);
  Decision a = key.attempt(k_t0);
  Decision b = key.attempt(k_t0);
  REQUIRE(a.allowed);
  REQUIRE(b.allowed);
  key.cancel(k_t0 + 1, a);
  CHECK(key.attempt(k_t0 + 2).allowed);
  CHECK_FALSE(key.attempt(k_t0 + 3).allowed);
  key.cancel(k_t0 + 4, b);
  key.cancel(k_t0 + 5, a); // given back already: nothing more to return
  CHECK(key.attempt(k_t0 + 6).allowed);
  CHECK_FALSE(key.attempt(k_t0 + 7).allowed);
}

TEST_CASE("core::sliding_log waiters reserved at one time are each given back") {
  // 3 per period: 2 taken at t0, 1 at t0 + 1 s. Two waiters both get t0 + period, when the
  // first grant (cost 2) leaves the window. Cancelling both frees both slots.
  TestKey key = log_key(3);
  REQUIRE(key.attempt(k_t0, 2).allowed);
  REQUIRE(key.attempt(k_t0 + k_s).allowed);
  Decision w1 = key.reserve(k_t0 + 2 * k_s);
  Decision w2 = key.reserve(k_t0 + 2 * k_s);
  REQUIRE(w1.grant.at == k_t0 + k_min);
  REQUIRE(w2.grant.at == k_t0 + k_min);
  key.cancel(k_t0 + 3 * k_s, w1);
  key.cancel(k_t0 + 3 * k_s, w2);
  CHECK(key.standing(k_t0 + k_min).remaining == 2);
  Decision again = key.reserve(k_t0 + 4 * k_s, 2);
  CHECK(again.grant.at == k_t0 + k_min);
}

TEST_CASE("core::sliding_log grants of other costs at one time are not given back") {
  // The last entry at t0 costs 1; a cancel of cost 2 at t0 cannot tell which it was.
  TestKey key = log_key(3);
  Decision two = key.attempt(k_t0, 2);
  Decision one = key.attempt(k_t0);
  REQUIRE(two.allowed);
  REQUIRE(one.allowed);
  key.cancel(k_t0 + 1, two);
  CHECK_FALSE(key.attempt(k_t0 + 2).allowed);
  key.cancel(k_t0 + 3, one);
  CHECK(key.attempt(k_t0 + 4).allowed);
}

TEST_CASE("core::sliding_log reports remaining and the time until the last entry expires") {
  TestKey key = log_key();
  key.attempt(k_t0);
  Decision second = key.attempt(k_t0 + 20 * k_s, 3);
  CHECK(second.remaining == 6);
  CHECK(second.reset_after == k_min);
  Decision standing = key.standing(k_t0 + 70 * k_s);
  CHECK(standing.remaining == 7);
  CHECK(standing.reset_after == 10 * k_s);
  CHECK_FALSE(key.fresh(k_t0 + 80 * k_s - 1));
  CHECK(key.fresh(k_t0 + 80 * k_s));
  // A reservation in the future: nothing is left now, and it expires a period after it.
  TestKey busy = log_key(1);
  busy.attempt(k_t0);
  Decision waiter = busy.reserve(k_t0);
  CHECK(waiter.remaining == 0);
  CHECK(waiter.reset_after == 2 * k_min);
}

TEST_CASE("core::sliding_log keeps one period of entries") {
  TestKey key = log_key(100, k_s);
  for (int i = 0; i < 5000; ++i) {
    REQUIRE(key.attempt(k_t0 + i * 10 * k_ms).allowed);
    // And the last entry forgotten, which bounds the times of those before it.
    CHECK(key.log().size() <= 102);
  }
}

TEST_CASE("core::sliding_log a decision asks the log a few questions however full it is") {
  std::vector<Limit> limits{limit_of(100'000, k_min)};
  KeyState state;
  state.algorithm = Algorithm::sliding_log;
  CountingGrantLog log;
  Request request;
  auto calls_for = [&](Nanos now, bool reserve) {
    log.calls = 0;
    request.now = now;
    request.reserve = reserve;
    decide(state, limits, log, request);
    return log.calls;
  };
  int small = calls_for(k_t0, false);
  for (int i = 1; i < 100'000; ++i) {
    request.now = k_t0 + Nanos{i} * 100 * k_nanos_per_micro;
    REQUIRE(decide(state, limits, log, request).allowed);
  }
  REQUIRE(log.inner.size() == 100'000);
  int full_try = calls_for(k_t0 + 20 * k_s, false);
  int full_wait = calls_for(k_t0 + 20 * k_s, true);
  CHECK(full_try <= 3);
  CHECK(full_wait <= 6);
  CHECK(small <= 6);
  CHECK(log.removals == 0);
}

TEST_CASE("core::sliding_log a key's clock never runs backwards") {
  TestKey key = log_key(2);
  REQUIRE(key.attempt(k_t0 + k_min).allowed);
  REQUIRE(key.attempt(k_t0 + k_min).allowed);
  // 2 minutes back, (t - PERIOD, t] would look empty.
  Decision stepped = key.attempt(k_t0 - k_min);
  CHECK_FALSE(stepped.allowed);
  CHECK(stepped.now == k_t0 + k_min);
  CHECK(stepped.wait == k_min);
}
