#pragma once

#include "core/algorithm.hpp"
#include "core/limit.hpp"
#include "sim/arrival.hpp"

#include <span>
#include <string>

namespace ratelimit::sim {

struct Recommendation {
  core::Algorithm algorithm = core::Algorithm::token_bucket;
  // One line: why, with the figures that decided.
  std::string reason;
};

// What one algorithm made of the arrivals, as the table shows it.
struct Outcome {
  core::Algorithm algorithm = core::Algorithm::token_bucket;
  // The most cost granted in one reference PERIOD.
  std::int64_t peak_per_period = 0;
  std::int64_t denied = 0;
};

// Inter-arrival variation above which arrivals count as bursts (Poisson traffic is 1).
inline constexpr double k_bursty_variation = 1.5;
// The largest sliding log still called cheap enough to be exact, in bytes per key.
inline constexpr std::int64_t k_affordable_log_bytes = 64 * 1024;

// The decision checklist, applied to the shape of `arrivals` under the first of `limits`,
// N/PERIOD, first match wins:
//  1. the arrivals never exceed N in any PERIOD-long interval: nothing needs limiting, so
//     the cheapest, fixed-window, which admits them all;
//  2. fixed-window admitted more than N within one PERIOD (`fixed_window_peak`, its boundary
//     excess): exactness matters: sliding-log when its largest possible log (N entries of 16
//     bytes for each limit) stays within `k_affordable_log_bytes`, else the cheap
//     approximation, sliding-window;
//  3. the gaps between arrivals vary more than `k_bursty_variation`: bursts: token-bucket;
//  4. otherwise traffic above the limit at an even pace: leaky-bucket, a steady downstream.
// The choice must then agree with the table, `outcomes` (when given): the excess that rules
// out fixed-window rules out any algorithm that let more than N through in one PERIOD, and
// when every request `waits` for its slot, one that denied requests (a full leaky-bucket
// queue) fails them. A choice ruled out gives way to the exact sliding-log, which neither
// exceeds N nor denies a request that waits; to sliding-window when the log is not
// affordable and the table clears it, else to sliding-log whatever its log.
Recommendation recommend(std::span<const Arrival> arrivals, std::span<const core::Limit> limits,
                         std::int64_t fixed_window_peak, std::span<const Outcome> outcomes = {},
                         bool waits = false);

} // namespace ratelimit::sim
