#pragma once

#include "core/time.hpp"

#include <cstdint>
#include <span>

namespace ratelimit::sim {

// One request of a simulation: at `at` nanoseconds after the start of the virtual clock,
// asking for `cost` units.
struct Arrival {
  core::Nanos at = 0;
  std::int64_t cost = 1;

  friend bool operator==(const Arrival&, const Arrival&) = default;
};

// The most cost inside any half-open interval [t, t + `period`) of `events`, which must be
// in time order. A sliding log of N per `period` never lets this exceed N.
std::int64_t peak_per_period(std::span<const Arrival> events, core::Nanos period);

// The coefficient of variation (standard deviation / mean) of the gaps between consecutive
// `arrivals`: 0 for an even pace, about 1 for random (Poisson) arrivals, more for bursts.
// Fewer than three arrivals count as even; all at one instant as infinitely bursty.
double gap_variation(std::span<const Arrival> arrivals);

} // namespace ratelimit::sim
