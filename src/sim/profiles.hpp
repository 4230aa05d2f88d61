#pragma once

#include "core/rate.hpp"
#include "core/result.hpp"
#include "sim/arrival.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace ratelimit::sim {

// Synthetic traffic shapes, each built from a reference rate N/PERIOD.
enum class Profile {
  steady,   // evenly spaced at load x N/PERIOD, the first at 0
  burst,    // quiet, then bursts: every 2 PERIODs, 2 x load x N arrivals in its last PERIOD/10
  boundary, // every 2 PERIODs, load x N arrivals in the PERIOD/10 before a window boundary
            // and as many in the PERIOD/10 from it
  poisson,  // random, exponential gaps averaging PERIOD / (load x N), from a seed
};

std::string_view profile_name(Profile profile);

// The inverse of `profile_name`.
core::Result<Profile> parse_profile(std::string_view name);

// A positive load factor, kept as an exact fraction so that profiles stay deterministic.
struct Load {
  std::int64_t numerator = 1;
  std::int64_t denominator = 1;
};

// Parses a decimal load factor above 0 and at most 1000 with at most 6 decimals: `1`, `0.5`,
// `2.25`.
core::Result<Load> parse_load(std::string_view text);

// What a profile needs; `duration` > 0. Arrivals fall in [0, duration).
struct ProfileSpec {
  Profile profile = Profile::steady;
  core::Rate rate;
  core::Nanos duration = 0;
  Load load;
  std::uint64_t seed = 1;
};

inline constexpr std::int64_t k_max_profile_arrivals = 10'000'000;

// The arrivals of `spec`, cost 1 each, in time order; the same for the same spec on every
// machine (the pseudo-random generator is SplitMix64, written here). An error when the
// profile would hold no arrival or more than `k_max_profile_arrivals`.
core::Result<std::vector<Arrival>> generate(const ProfileSpec& spec);

} // namespace ratelimit::sim
