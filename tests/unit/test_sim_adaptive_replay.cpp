#include "sim/adaptive_replay.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using core::k_nanos_per_second;

namespace {

constexpr core::Nanos k_s = k_nanos_per_second;

sim::AdaptiveSpec secret_five_per_second() {
  sim::AdaptiveSpec spec;
  spec.ceiling = core::Rate{50, k_s};
  spec.server = {{core::Rate{5, k_s}, 0}};
  return spec;
}

} // namespace

TEST_CASE("sim::replay_adaptive finds a secret 5/s under a ceiling of 50/s, for every seed") {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    sim::AdaptiveSpec spec = secret_five_per_second();
    spec.seed = seed;
    sim::AdaptiveReplay replay = sim::replay_adaptive(spec);
    CHECK(replay.calls == 300);
    // 300 calls in windows of 5 from 0: the last window opens at 59 s.
    CHECK(replay.least_duration == 59 * k_s);
    CHECK(replay.throttled >= 1);
    CHECK(replay.throttled <= 30);
    CHECK(replay.cuts < replay.throttled);
    CHECK(replay.duration <= 90 * k_s);
    std::int64_t answers = 0;
    for (const sim::AdaptiveSample& sample : replay.samples) {
      answers += sample.succeeded + sample.throttled;
    }
    CHECK(answers == 300 + replay.throttled);
  }
}

TEST_CASE("sim::replay_adaptive follows a raise of the secret limit within 30 s") {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    sim::AdaptiveSpec spec = secret_five_per_second();
    spec.server.push_back({core::Rate{10, k_s}, 30 * k_s});
    spec.seed = seed;
    sim::AdaptiveReplay replay = sim::replay_adaptive(spec);
    REQUIRE(replay.raises.size() == 1);
    CHECK(replay.raises[0].after > 0);
    CHECK(replay.raises[0].after <= 30 * k_s);
    CHECK(replay.throttled <= 30);
  }
}

TEST_CASE("sim::replay_adaptive with one worker and a limit the ceiling never reaches") {
  sim::AdaptiveSpec spec = secret_five_per_second();
  spec.ceiling = core::Rate{2, k_s};
  spec.workers = 1;
  spec.calls = 20;
  sim::AdaptiveReplay replay = sim::replay_adaptive(spec);
  CHECK(replay.throttled == 0);
  CHECK(replay.cuts == 0);
  CHECK(replay.raises.empty());
  // Slots half a second apart from 0: the last at 9.5 s, answered within 0.15 s.
  CHECK(replay.duration > 9500 * core::k_nanos_per_milli);
  CHECK(replay.duration < 9700 * core::k_nanos_per_milli);
}
