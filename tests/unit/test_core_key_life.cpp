#include "core/key_life.hpp"

#include "core/bounds.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// A call of `algorithm` (chosen or the default) under `limits`: a `try` of 1 at `now`.
KeyCall try_at(Algorithm algorithm, bool chosen, const std::vector<Limit>& limits, Nanos now) {
  return {algorithm, chosen, limits, Request{now, 1, false}};
}

// A key stored in memory, as the stores keep one.
struct StoredKey {
  std::optional<KeyState> stored;
  MemoryGrantLog log;

  KeyOutcome decide(const KeyCall& call) {
    KeyOutcome outcome = decide_key(stored, call, log);
    if (outcome.write == KeyWrite::state) {
      stored = outcome.state;
    } else if (outcome.write == KeyWrite::erase) {
      stored.reset();
    }
    return outcome;
  }
};

const std::vector<Limit> k_two_per_second{limit_of(2, k_s)};
const std::vector<Limit> k_five_per_second{limit_of(5, k_s)};

} // namespace

TEST_CASE("core::decide_key writes a new key's grant, and nothing for its denial") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    StoredKey key;
    KeyOutcome first = key.decide(try_at(algorithm, true, k_two_per_second, k_t0));
    CHECK(first.decision.allowed);
    CHECK(first.write == KeyWrite::state);
    CHECK_FALSE(first.takes_algorithm); // no key was stored: the store makes one
    CHECK(first.state.algorithm == algorithm);
    CHECK(first.fresh_at > k_t0);
    CHECK(first.fresh_at == k_t0 + inspect(first.state, key.log, k_t0).reset_after);
    key.decide(try_at(algorithm, true, k_two_per_second, k_t0));
    KeyOutcome third = key.decide(try_at(algorithm, true, k_two_per_second, k_t0));
    CHECK_FALSE(third.decision.allowed);
    CHECK(third.write == KeyWrite::nothing);
  }
}

TEST_CASE("core::decide_key writes a denial that changes the key's limits") {
  StoredKey key;
  key.decide(try_at(Algorithm::fixed_window, true, k_two_per_second, k_t0));
  key.decide(try_at(Algorithm::fixed_window, true, k_two_per_second, k_t0));
  std::vector<Limit> one{limit_of(1, k_s)};
  KeyOutcome denied = key.decide(try_at(Algorithm::fixed_window, true, one, k_t0));
  CHECK_FALSE(denied.decision.allowed);
  REQUIRE(denied.write == KeyWrite::state);
  REQUIRE(denied.state.limits.size() == 1);
  CHECK(denied.state.limits[0].limit == one[0]);
  // Asked again with the limits it now holds, a denial writes nothing.
  CHECK(key.decide(try_at(Algorithm::fixed_window, true, one, k_t0)).write == KeyWrite::nothing);
}

TEST_CASE("core::decide_key: a key in use keeps its algorithm, or refuses one chosen") {
  StoredKey key;
  key.decide(try_at(Algorithm::token_bucket, true, k_two_per_second, k_t0));
  KeyOutcome by_default =
      key.decide(try_at(Algorithm::sliding_log, false, k_two_per_second, k_t0 + k_ms));
  CHECK_FALSE(by_default.conflict);
  CHECK(by_default.decision.algorithm == Algorithm::token_bucket);
  CHECK(by_default.state.algorithm == Algorithm::token_bucket);
  CHECK_FALSE(by_default.takes_algorithm);
  CHECK_FALSE(by_default.forgot);
  KeyOutcome chosen = key.decide(try_at(Algorithm::sliding_log, true, k_two_per_second, k_t0));
  REQUIRE(chosen.conflict);
  CHECK(*chosen.conflict == Algorithm::token_bucket);
  CHECK(chosen.write == KeyWrite::nothing);
  // Under other limits as well, while it holds something.
  CHECK(key.decide(try_at(Algorithm::sliding_log, true, k_five_per_second, k_t0)).conflict);
}

TEST_CASE("core::decide_key forgets a fresh key that another algorithm or other limits ask for") {
  StoredKey key;
  key.decide(try_at(Algorithm::sliding_log, true, k_two_per_second, k_t0));
  REQUIRE(key.log.size() == 1);
  // A second later the key holds nothing: another algorithm takes it, from a new key.
  KeyOutcome taken =
      key.decide(try_at(Algorithm::token_bucket, true, k_two_per_second, k_t0 + k_s));
  CHECK_FALSE(taken.conflict);
  CHECK(taken.decision.allowed);
  CHECK(taken.write == KeyWrite::state);
  CHECK(taken.takes_algorithm);
  CHECK(taken.forgot); // nothing of it stays: a pause that ended goes too
  CHECK(taken.state.algorithm == Algorithm::token_bucket);
  CHECK(key.log.size() == 0);
  // Forgotten and then denied (a cost too far in the future): erased.
  StoredKey other;
  other.decide(try_at(Algorithm::fixed_window, true, k_two_per_second, k_t0));
  KeyCall far = try_at(Algorithm::fixed_window, true, k_five_per_second, k_t0 + 2 * k_s);
  far.request.now = k_max_time + 1;
  KeyOutcome erased = other.decide(far);
  CHECK_FALSE(erased.decision.allowed);
  CHECK(erased.write == KeyWrite::erase);
}

TEST_CASE("core::decide_key: a key forgotten starts again from a new key's clock") {
  // Granted at t0, its clock moved on to t0 + 10 s by a pause of 0, which ended there.
  StoredKey key;
  key.decide(try_at(Algorithm::token_bucket, true, k_two_per_second, k_t0));
  key.stored = pause_key(key.stored, k_t0 + 10 * k_s, 0, key.log).state;
  REQUIRE(key.stored->clock == k_t0 + 10 * k_s);
  StoredKey same = key;
  // The system clock steps back to t0 + 5 s. The same limits decide at the key's clock...
  KeyOutcome kept =
      same.decide(try_at(Algorithm::token_bucket, true, k_two_per_second, k_t0 + 5 * k_s));
  CHECK(kept.decision.now == k_t0 + 10 * k_s);
  // ... others forget the key, fresh at its clock: a new key, with no clock to hold the
  // past against. The pause ended by the key's clock: nothing is kept of it.
  KeyOutcome renewed =
      key.decide(try_at(Algorithm::token_bucket, true, k_five_per_second, k_t0 + 5 * k_s));
  CHECK(renewed.decision.now == k_t0 + 5 * k_s);
  CHECK(renewed.state.clock == k_t0 + 5 * k_s);
  CHECK(renewed.state.paused_until == 0);
}

TEST_CASE("core::decide_key: a key that holds only a pause takes the first call's algorithm") {
  StoredKey key;
  KeyOutcome paused = pause_key(std::nullopt, k_t0, 2 * k_s, key.log);
  REQUIRE(paused.write == KeyWrite::state);
  CHECK(paused.decision.paused_until == k_t0 + 2 * k_s);
  CHECK(paused.fresh_at == k_t0 + 2 * k_s);
  key.stored = paused.state;
  KeyOutcome first = key.decide(try_at(Algorithm::leaky_bucket, false, k_two_per_second, k_t0));
  CHECK_FALSE(first.conflict);
  CHECK_FALSE(first.decision.allowed);
  CHECK(first.decision.paused_until == k_t0 + 2 * k_s);
  // Denied, but its limits changed from none: written, with the algorithm.
  REQUIRE(first.write == KeyWrite::state);
  CHECK(first.takes_algorithm);
  CHECK(first.state.algorithm == Algorithm::leaky_bucket);
  CHECK(first.state.paused_until == k_t0 + 2 * k_s);
}

TEST_CASE("core::decide_key: a fresh key forgotten under a pause keeps the pause") {
  StoredKey key;
  key.decide(try_at(Algorithm::sliding_log, true, k_two_per_second, k_t0));
  KeyOutcome paused = pause_key(key.stored, k_t0 + 2 * k_s, 3 * k_s, key.log);
  key.stored = paused.state;
  KeyOutcome taken =
      key.decide(try_at(Algorithm::fixed_window, true, k_two_per_second, k_t0 + 3 * k_s));
  CHECK_FALSE(taken.conflict);
  CHECK(key.log.size() == 0);
  REQUIRE(taken.write == KeyWrite::state);
  CHECK(taken.takes_algorithm);
  CHECK(taken.forgot);
  CHECK(taken.state.algorithm == Algorithm::fixed_window);
  CHECK(taken.state.paused_until == k_t0 + 5 * k_s);
  CHECK(taken.state.clock == k_t0 + 3 * k_s);
  CHECK(taken.decision.paused_until == k_t0 + 5 * k_s);
}

TEST_CASE("core::pause_key makes no key for a pause that ends before it begins") {
  MemoryGrantLog log;
  CHECK(pause_key(std::nullopt, k_t0, 0, log).write == KeyWrite::nothing);
  KeyState stored;
  stored.clock = k_t0;
  KeyOutcome kept = pause_key(stored, k_t0 - k_s, 0, log);
  CHECK(kept.write == KeyWrite::state);
  CHECK(kept.decision.now == k_t0);
}

TEST_CASE("core::give_back_to_key gives nothing back to a key reset or of another algorithm") {
  StoredKey key;
  KeyOutcome granted =
      key.decide({Algorithm::token_bucket, true, k_two_per_second, Request{k_t0, 2, true}});
  REQUIRE(granted.decision.allowed);
  const Grant& grant = granted.decision.grant;
  CHECK(give_back_to_key(std::nullopt, Algorithm::token_bucket, k_two_per_second, grant, k_t0,
                         key.log)
            .write == KeyWrite::nothing);
  CHECK(
      give_back_to_key(key.stored, Algorithm::leaky_bucket, k_two_per_second, grant, k_t0, key.log)
          .write == KeyWrite::nothing);
  KeyOutcome given = give_back_to_key(key.stored, Algorithm::token_bucket, k_two_per_second, grant,
                                      k_t0 + k_ms, key.log);
  REQUIRE(given.write == KeyWrite::state);
  CHECK(given.state.clock == k_t0 + k_ms);
  CHECK(inspect(given.state, key.log, k_t0 + k_ms).remaining == 2);
}

TEST_CASE("core::decide_key writes no state past the bounds: limits carried from a far debt") {
  // Near 2100 a bucket owes a second at a million a second; a day's limit carries those
  // units at its own rate, a debt that saturates past the latest time counted (2116).
  StoredKey key;
  Nanos t = 4'100'000'000 * k_s;
  std::vector<Limit> fast{limit_of(1'000'000, k_s)};
  KeyCall reserve{Algorithm::token_bucket, true, fast, Request{t, 1'000'000, true}};
  REQUIRE(key.decide(reserve).decision.allowed);
  REQUIRE(key.decide(reserve).decision.allowed);
  std::vector<Limit> daily{limit_of(1, 86'400 * k_s)};
  KeyOutcome denied = key.decide(try_at(Algorithm::token_bucket, true, daily, t));
  CHECK_FALSE(denied.decision.allowed);
  CHECK_FALSE(within_bounds(denied.state));
  CHECK(denied.write == KeyWrite::nothing);
  REQUIRE(key.stored);
  CHECK(within_bounds(*key.stored));
  CHECK(key.stored->limits.front().limit == fast.front());
  // Nor when a grant under the day's limit is given back.
  Grant grant{t, 1, {t + 1}};
  KeyOutcome given =
      give_back_to_key(key.stored, Algorithm::token_bucket, daily, grant, t, key.log);
  CHECK(given.write == KeyWrite::nothing);
}
