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
Recommendation recommend(std::span<const Arrival> arrivals, std::span<const core::Limit> limits,
                         std::int64_t fixed_window_peak);

} // namespace ratelimit::sim
