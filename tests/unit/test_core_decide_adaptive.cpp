#include "core/adaptive_rate.hpp"
#include "core/decide.hpp"
#include "core/key_life.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

Request adaptive_request(Nanos now, bool reserve = false) {
  Request request;
  request.now = now;
  request.reserve = reserve;
  request.adaptive = true;
  return request;
}

Observation answer(bool throttled) {
  Observation observation;
  observation.throttled = throttled;
  observation.answered = true;
  return observation;
}

} // namespace

TEST_CASE("core::decide spaces an adaptive key's grants at its ceiling before any cut") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(10, k_s)});
    REQUIRE(key.ask(adaptive_request(k_t0)).allowed);
    REQUIRE(key.state().server.adaptive);
    // The limit alone would grant ten at once; the rate spaces them 100 ms apart.
    Decision refused = key.ask(adaptive_request(k_t0 + 40 * k_ms));
    CHECK_FALSE(refused.allowed);
    CHECK(refused.wait == 60 * k_ms);
    Decision reserved = key.ask(adaptive_request(k_t0 + 40 * k_ms, true));
    REQUIRE(reserved.allowed);
    CHECK(reserved.grant.at == k_t0 + 100 * k_ms);
    CHECK(key.state().server.adaptive->next_slot == k_t0 + 200 * k_ms);
  }
}

TEST_CASE("core::decide: a call without --adaptive neither waits for the spacing nor moves it") {
  TestKey key(Algorithm::token_bucket, {limit_of(10, k_s)});
  REQUIRE(key.ask(adaptive_request(k_t0)).allowed);
  CHECK_FALSE(key.ask(adaptive_request(k_t0 + 50 * k_ms)).allowed);
  CHECK(key.attempt(k_t0 + 50 * k_ms).allowed);
  CHECK(key.state().server.adaptive->next_slot == k_t0 + 100 * k_ms);
}

TEST_CASE("core::observe cuts an adaptive key's rate on a throttle, once per overload") {
  TestKey key(Algorithm::sliding_log, {limit_of(50, k_s)});
  Nanos now = k_t0;
  // Twenty grants, each answered, at 5/s: the successes measure 5/s.
  for (int i = 0; i < 20; ++i, now += 200 * k_ms) {
    REQUIRE(key.ask(adaptive_request(now)).allowed);
    observe(key.state(), now + 50 * k_ms, answer(false));
  }
  CHECK(key.state().server.adaptive->max_rate == 0);
  // Eight workers' 429s for one overload: one cut, from the rate measured.
  for (int worker = 0; worker < 8; ++worker) {
    observe(key.state(), now + worker * 10 * k_ms, answer(true));
  }
  const AdaptiveState& adaptive = *key.state().server.adaptive;
  CHECK(adaptive.cut_at == now);
  CHECK(adaptive.max_rate > 4'500'000);
  CHECK(adaptive.max_rate <= 5'100'000);
  // Spaced at 0.7 of it from the cut, grown a little since: about 3.6/s, 280 ms apart.
  now += 100 * k_ms;
  Decision first = key.ask(adaptive_request(now, true));
  Decision second = key.ask(adaptive_request(now, true));
  REQUIRE(second.allowed);
  CHECK(second.grant.at - first.grant.at > 260 * k_ms);
  CHECK(second.grant.at - first.grant.at < 320 * k_ms);
}

TEST_CASE("core::observe leaves a key that no --adaptive call used without an adaptive rate") {
  TestKey key(Algorithm::sliding_log, {limit_of(50, k_s)});
  REQUIRE(key.attempt(k_t0).allowed);
  observe(key.state(), k_t0 + 10 * k_ms, answer(true));
  CHECK_FALSE(key.state().server.adaptive);
}

TEST_CASE("core::is_fresh holds an adaptive key that was cut until 8 K after the cut") {
  TestKey key(Algorithm::token_bucket, {limit_of(10, k_s)});
  REQUIRE(key.ask(adaptive_request(k_t0)).allowed);
  observe(key.state(), k_t0 + 10 * k_ms, answer(true));
  const AdaptiveState adaptive = *key.state().server.adaptive;
  Nanos until = adaptive.cut_at + 8 * adaptive_recovery(adaptive.max_rate);
  CHECK(adaptive_until(adaptive) == until);
  CHECK_FALSE(key.fresh(until - k_ms));
  CHECK(key.fresh(until));
  // By then the rate is back at the ceiling.
  CHECK(effective_rate(adaptive, Rate{10, k_s}, until) == Rate{10, k_s});
}

TEST_CASE("core::decide_key keeps what an adaptive key learned when it forgets its limits") {
  TestKey key(Algorithm::sliding_log, {limit_of(10, k_s)});
  REQUIRE(key.ask(adaptive_request(k_t0)).allowed);
  observe(key.state(), k_t0 + 10 * k_ms, answer(true));
  // Limits fresh two seconds later, the learned rate not: a call with other limits finds it.
  KeyCall call;
  std::vector<Limit> limits{limit_of(20, k_s)};
  call.limits = limits;
  call.request = adaptive_request(k_t0 + 2 * k_s);
  KeyOutcome outcome = decide_key(key.state(), call, key.log());
  CHECK(outcome.forgot);
  REQUIRE(outcome.state.server.adaptive);
  CHECK(outcome.state.server.adaptive->cut_at == k_t0 + 10 * k_ms);
}

TEST_CASE("core::give_back returns the spacing of a slot still to come") {
  TestKey key(Algorithm::sliding_log, {limit_of(10, k_s)});
  Decision first = key.ask(adaptive_request(k_t0, true));
  Decision second = key.ask(adaptive_request(k_t0, true));
  Decision third = key.ask(adaptive_request(k_t0, true));
  REQUIRE(third.allowed);
  CHECK(third.grant.at == k_t0 + 200 * k_ms);
  CHECK(third.grant.paced == 100 * k_ms);
  // Waiters that give their slots back, as after a pause, and reserve again find them.
  key.cancel(k_t0 + 10 * k_ms, third);
  key.cancel(k_t0 + 10 * k_ms, second);
  CHECK(key.state().server.adaptive->next_slot == k_t0 + 100 * k_ms);
  CHECK(key.ask(adaptive_request(k_t0 + 10 * k_ms, true)).grant.at == k_t0 + 100 * k_ms);
  // A slot that has passed is spent: giving it back returns nothing of the spacing.
  key.cancel(k_t0 + 150 * k_ms, first);
  CHECK(key.state().server.adaptive->next_slot == k_t0 + 200 * k_ms);
}
