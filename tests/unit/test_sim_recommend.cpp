#include "sim/profiles.hpp"
#include "sim/recommend.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using core::Algorithm;
using core::k_nanos_per_second;

namespace {

std::vector<sim::Arrival> profile(sim::Profile shape, sim::Load load = {1, 1},
                                  std::int64_t count = 10) {
  auto generated = sim::generate(
      {shape, core::Rate{count, k_nanos_per_second}, 10 * k_nanos_per_second, load, 1});
  REQUIRE(generated.ok());
  return *generated;
}

std::vector<core::Limit> limit(std::int64_t count) {
  return {core::Limit{{count, k_nanos_per_second}, count}};
}

} // namespace

TEST_CASE("sim::recommend: traffic within the limit needs only the cheapest, fixed-window") {
  auto steady = profile(sim::Profile::steady);
  auto recommendation = sim::recommend(steady, limit(10), 10);
  CHECK(recommendation.algorithm == Algorithm::fixed_window);
  CHECK(recommendation.reason.find("never exceed 10 in any 1s (at most 10)") != std::string::npos);
}

TEST_CASE("sim::recommend: a fixed-window boundary excess asks for exactness") {
  auto boundary = profile(sim::Profile::boundary);
  CHECK(sim::recommend(boundary, limit(10), 20).algorithm == Algorithm::sliding_log);
  // Without the excess, the same bursts go to the token bucket.
  CHECK(sim::recommend(boundary, limit(10), 10).algorithm == Algorithm::token_bucket);
  // A log of 10 000 entries per key is too much: the counter approximates it.
  auto large = profile(sim::Profile::boundary, {1, 1}, 10'000);
  auto recommendation = sim::recommend(large, limit(10'000), 20'000);
  CHECK(recommendation.algorithm == Algorithm::sliding_window);
  CHECK(recommendation.reason.find("could need 160000 bytes") != std::string::npos);
}

TEST_CASE("sim::recommend: bursts go to token-bucket, an even overload to leaky-bucket") {
  auto bursts = profile(sim::Profile::burst);
  auto recommendation = sim::recommend(bursts, limit(10), 10);
  CHECK(recommendation.algorithm == Algorithm::token_bucket);
  CHECK(recommendation.reason.find("bursts of up to 10") != std::string::npos);
  auto steady = profile(sim::Profile::steady, {2, 1});
  recommendation = sim::recommend(steady, limit(10), 10);
  CHECK(recommendation.algorithm == Algorithm::leaky_bucket);
  CHECK(recommendation.reason.find("one every 0.1s") != std::string::npos);
  // Poisson arrivals vary about as much as their mean gap: not bursts by this measure.
  auto random = profile(sim::Profile::poisson, {2, 1});
  CHECK(sim::gap_variation(random) > 0.8);
  CHECK(sim::gap_variation(random) < 1.2);
  CHECK(sim::recommend(random, limit(10), 10).algorithm == Algorithm::leaky_bucket);
}

TEST_CASE("sim::recommend agrees with the table: no choice that exceeds N or denies waiters") {
  auto bursts = profile(sim::Profile::burst);
  std::vector<sim::Outcome> table = {{Algorithm::token_bucket, 19, 0},
                                     {Algorithm::leaky_bucket, 10, 40},
                                     {Algorithm::fixed_window, 10, 0},
                                     {Algorithm::sliding_window, 12, 0},
                                     {Algorithm::sliding_log, 10, 0}};
  auto recommendation = sim::recommend(bursts, limit(10), 10, table, true);
  CHECK(recommendation.algorithm == Algorithm::sliding_log);
  CHECK(recommendation.reason.find("token-bucket let 19 through in one 1s, above the limit of "
                                   "10") != std::string::npos);
  // The same figures within the limit leave the shape's choice alone.
  table[0].peak_per_period = 10;
  CHECK(sim::recommend(bursts, limit(10), 10, table, true).algorithm == Algorithm::token_bucket);
  // A leaky bucket that denied waiters is ruled out in wait mode only.
  auto steady = profile(sim::Profile::steady, {2, 1});
  recommendation = sim::recommend(steady, limit(10), 10, table, true);
  CHECK(recommendation.algorithm == Algorithm::sliding_log);
  CHECK(recommendation.reason.find("leaky-bucket denied 40 requests that were to wait") !=
        std::string::npos);
  CHECK(sim::recommend(steady, limit(10), 10, table, false).algorithm == Algorithm::leaky_bucket);
}
