#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// 5/s: one output every 200 ms, a queue of `burst` (default 5).
TestKey leaky(std::int64_t burst = 5) {
  return TestKey(Algorithm::leaky_bucket, {limit_of(5, k_s, burst)});
}

} // namespace

TEST_CASE("core::leaky_bucket five tries at once on 5/s admit one") {
  TestKey key = leaky();
  CHECK(key.attempt(k_t0).allowed);
  for (int i = 0; i < 4; ++i) {
    Decision denied = key.attempt(k_t0);
    CHECK_FALSE(denied.allowed);
    CHECK(denied.wait == 200 * k_ms);
  }
  CHECK_FALSE(key.attempt(k_t0 + 200 * k_ms - 1).allowed);
  CHECK(key.attempt(k_t0 + 200 * k_ms).allowed);
}

TEST_CASE("core::leaky_bucket spaces grants exactly one interval apart") {
  TestKey key = leaky();
  // Six waiters at once: one leaves now, five queue behind it, 200 ms apart.
  for (int i = 0; i < 6; ++i) {
    Decision decision = key.reserve(k_t0);
    REQUIRE(decision.allowed);
    CHECK(decision.grant.at == k_t0 + i * 200 * k_ms);
    CHECK(decision.wait == i * 200 * k_ms);
  }
  // Spacing holds for tries too, and an idle bucket does not save up a burst.
  TestKey idle = leaky();
  CHECK(idle.attempt(k_t0 + 10 * k_s).allowed);
  CHECK_FALSE(idle.attempt(k_t0 + 10 * k_s + 199 * k_ms).allowed);
  CHECK(idle.attempt(k_t0 + 10 * k_s + 250 * k_ms).allowed);
  CHECK_FALSE(idle.attempt(k_t0 + 10 * k_s + 449 * k_ms).allowed);
  CHECK(idle.attempt(k_t0 + 10 * k_s + 450 * k_ms).allowed);
}

TEST_CASE("core::leaky_bucket refuses at once when burst requests are queued ahead") {
  TestKey key = leaky();
  for (int i = 0; i < 6; ++i) {
    REQUIRE(key.reserve(k_t0).allowed);
  }
  // Five are queued after the one leaving now: the queue overflowed.
  Decision dropped = key.reserve(k_t0);
  CHECK_FALSE(dropped.allowed);
  CHECK(dropped.wait == 1200 * k_ms);
  CHECK(dropped.remaining == 0);
  // Nothing was taken by the refusal; once one has left, there is room again.
  CHECK_FALSE(key.reserve(k_t0 + 200 * k_ms - 1).allowed);
  Decision queued = key.reserve(k_t0 + 200 * k_ms);
  CHECK(queued.allowed);
  CHECK(queued.grant.at == k_t0 + 1200 * k_ms);
}

TEST_CASE("core::leaky_bucket --burst sets the queue depth") {
  TestKey key = leaky(2);
  CHECK(key.attempt(k_t0).allowed);
  CHECK(key.reserve(k_t0).grant.at == k_t0 + 200 * k_ms);
  CHECK(key.reserve(k_t0).grant.at == k_t0 + 400 * k_ms);
  CHECK_FALSE(key.reserve(k_t0).allowed);
  // A longest wait refuses a slot further away, queue or not.
  TestKey patient = leaky();
  patient.attempt(k_t0);
  CHECK_FALSE(patient.reserve(k_t0, 1, 199 * k_ms).allowed);
  CHECK(patient.reserve(k_t0, 1, 200 * k_ms).allowed);
}

TEST_CASE("core::leaky_bucket a cost of C takes C intervals, and no PERIOD holds more than N") {
  TestKey key = leaky();
  CHECK(key.attempt(k_t0, 3).allowed);
  Decision denied = key.attempt(k_t0 + 400 * k_ms);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait == 200 * k_ms);
  // 3 at 0 and 5 more: (3 + 5 - 1) intervals apart, so that no second holds 8.
  Decision next = key.reserve(k_t0 + 400 * k_ms, 5);
  CHECK(next.grant.at == k_t0 + 1400 * k_ms);
  // Its five units then leave until 2.4 s: the queue (5 deep) is full until 1.4 s.
  CHECK_FALSE(key.reserve(k_t0 + 1399 * k_ms, 1).allowed);
  CHECK(key.reserve(k_t0 + 1400 * k_ms, 1).allowed);
}

TEST_CASE("core::leaky_bucket the queue depth bounds waiting, not cost") {
  // -r 1/s -b 2 -c 2: 2 units at one instant would be 2 in a second.
  TestKey slow(Algorithm::leaky_bucket, {limit_of(1, k_s, 2)});
  CHECK(check_limits(Algorithm::leaky_bucket, slow.limits(), 2, true).has_value());
  // -r 5/s -b 1 -c 2: a queue of one, a cost of 2 of the 5 a second allows.
  TestKey shallow(Algorithm::leaky_bucket, {limit_of(5, k_s, 1)});
  CHECK_FALSE(check_limits(Algorithm::leaky_bucket, shallow.limits(), 2, true).has_value());
  CHECK(shallow.attempt(k_t0, 2).allowed);
  // Its second unit waits in the queue until 200 ms; then a waiter of cost 2 finds
  // nothing queued ahead and is accepted, whatever its own cost.
  CHECK_FALSE(shallow.reserve(k_t0 + 199 * k_ms, 1).allowed);
  Decision waiter = shallow.reserve(k_t0 + 200 * k_ms, 2);
  CHECK(waiter.allowed);
  CHECK(waiter.grant.at == k_t0 + 600 * k_ms);
  // Then it waits ahead: a queue of one is full.
  CHECK_FALSE(shallow.reserve(k_t0 + 300 * k_ms, 1).allowed);
}

TEST_CASE("core::leaky_bucket reports the room in the queue and the time until fresh") {
  // Fresh when a request of the largest cost, 5, would leave at once, as from a new key: 4
  // intervals (800 ms) after the queue has drained.
  TestKey key = leaky();
  Decision first = key.attempt(k_t0);
  CHECK(first.remaining == 5);
  CHECK(first.reset_after == 1000 * k_ms);
  key.reserve(k_t0);
  Decision third = key.reserve(k_t0);
  CHECK(third.remaining == 3);
  CHECK(third.reset_after == 1400 * k_ms);
  CHECK(key.standing(k_t0 + 450 * k_ms).remaining == 5);
  CHECK(key.standing(k_t0 + 450 * k_ms).reset_after == 950 * k_ms);
  CHECK_FALSE(key.fresh(k_t0 + 1399 * k_ms));
  CHECK(key.fresh(k_t0 + 1400 * k_ms));
}

TEST_CASE("core::leaky_bucket is fresh only when a key forgotten would decide the same") {
  // One grant at t0 (next free at t0 + 200 ms). At t0 + 700 ms the queue has drained, but a
  // request of cost 5 still waits for its 4 intervals after the last grant: forgetting the
  // key then would let it through at once.
  TestKey key = leaky();
  REQUIRE(key.attempt(k_t0).allowed);
  CHECK_FALSE(key.fresh(k_t0 + 700 * k_ms));
  CHECK_FALSE(key.attempt(k_t0 + 700 * k_ms, 5).allowed);
  CHECK(key.fresh(k_t0 + 1000 * k_ms));
  CHECK(key.attempt(k_t0 + 1000 * k_ms, 5).allowed);
}

TEST_CASE("core::leaky_bucket cancel returns the last slot and leaves a gap for others") {
  TestKey key = leaky();
  key.attempt(k_t0);
  Decision a = key.reserve(k_t0);
  Decision b = key.reserve(k_t0);
  Decision c = key.reserve(k_t0);
  REQUIRE(c.grant.at == k_t0 + 600 * k_ms);
  // The last one's slot goes back to the queue.
  key.cancel(k_t0 + 1, c);
  CHECK(key.reserve(k_t0 + 1).grant.at == k_t0 + 600 * k_ms);
  // A slot in the middle stays a gap: moving the later ones up would break the spacing
  // they were promised, and a newcomer cannot jump the queue.
  key.cancel(k_t0 + 2, a);
  Decision d = key.reserve(k_t0 + 2);
  CHECK(d.grant.at == k_t0 + 800 * k_ms);
  CHECK_FALSE(key.attempt(k_t0 + 200 * k_ms).allowed);
  (void)b;
}

TEST_CASE("core::leaky_bucket a key's clock never runs backwards") {
  TestKey key = leaky();
  CHECK(key.attempt(k_t0).allowed);
  Decision stepped = key.attempt(k_t0 - 5 * k_s);
  CHECK_FALSE(stepped.allowed);
  CHECK(stepped.now == k_t0);
  CHECK(stepped.wait == 200 * k_ms);
  CHECK(key.reserve(k_t0 - 5 * k_s).grant.at == k_t0 + 200 * k_ms);
}
