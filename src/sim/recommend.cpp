#include "sim/recommend.hpp"

#include <fmt/format.h>

namespace ratelimit::sim {

namespace {

// What a sliding log can hold at most: N entries of a time and a cumulative cost per limit.
std::int64_t largest_log_bytes(std::span<const core::Limit> limits) {
  std::int64_t bytes = 0;
  for (const core::Limit& limit : limits) {
    bytes += limit.rate.count * 16;
  }
  return bytes;
}

} // namespace

Recommendation recommend(std::span<const Arrival> arrivals, std::span<const core::Limit> limits,
                         std::int64_t fixed_window_peak) {
  using core::Algorithm;
  const core::Limit& reference = limits.front();
  std::int64_t n = reference.rate.count;
  std::string per_period = core::format_seconds(reference.rate.period);
  std::int64_t arrival_peak = peak_per_period(arrivals, reference.rate.period);
  if (arrival_peak <= n) {
    return {Algorithm::fixed_window,
            fmt::format("the arrivals never exceed {} in any {} (at most {}): nothing needs "
                        "limiting, so the cheapest will do, and fixed-window admits them all in "
                        "16 bytes per limit",
                        n, per_period, arrival_peak)};
  }
  if (fixed_window_peak > n) {
    std::string excess = fmt::format("fixed-window admitted {} within one {} across a window "
                                     "boundary, above the limit of {}",
                                     fixed_window_peak, per_period, n);
    std::int64_t log_bytes = largest_log_bytes(limits);
    if (log_bytes <= k_affordable_log_bytes) {
      return {Algorithm::sliding_log,
              fmt::format("{}; sliding-log is exact and its log needs at most {} bytes", excess,
                          log_bytes)};
    }
    return {Algorithm::sliding_window,
            fmt::format("{}; an exact sliding-log could need {} bytes per key, sliding-window "
                        "comes close in 24 per limit",
                        excess, log_bytes)};
  }
  double variation = gap_variation(arrivals);
  std::string rate = core::format_rate(reference.rate);
  if (variation > k_bursty_variation) {
    return {Algorithm::token_bucket,
            fmt::format("the arrivals come in bursts (inter-arrival variation {:.2f}, above {}); "
                        "token-bucket lets bursts of up to {} through and holds {} on average",
                        variation, k_bursty_variation, reference.burst, rate)};
  }
  return {Algorithm::leaky_bucket,
          fmt::format("the arrivals exceed {} at an even pace (inter-arrival variation {:.2f}); "
                      "leaky-bucket passes them on as a steady output, one every {}",
                      rate, variation, core::format_seconds(reference.rate.emission_interval()))};
}

} // namespace ratelimit::sim
