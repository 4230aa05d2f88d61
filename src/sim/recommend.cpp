#include "sim/recommend.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <vector>

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

// Why the table rules `algorithm` out, or nothing (also when it has no row for it).
std::optional<std::string> ruled_out(core::Algorithm algorithm, std::span<const Outcome> outcomes,
                                     const core::Limit& reference, bool waits) {
  auto row = std::find_if(outcomes.begin(), outcomes.end(),
                          [&](const Outcome& outcome) { return outcome.algorithm == algorithm; });
  if (row == outcomes.end()) {
    return std::nullopt;
  }
  if (row->peak_per_period > reference.rate.count) {
    return fmt::format("{} let {} through in one {}, above the limit of {}",
                       core::algorithm_name(algorithm), row->peak_per_period,
                       core::format_seconds(reference.rate.period), reference.rate.count);
  }
  if (waits && row->denied > 0) {
    return fmt::format("{} denied {} requests that were to wait (its queue was full)",
                       core::algorithm_name(algorithm), row->denied);
  }
  return std::nullopt;
}

// The checklist alone, from the shape of the arrivals.
Recommendation from_the_shape(std::span<const Arrival> arrivals,
                              std::span<const core::Limit> limits, std::int64_t fixed_window_peak);

} // namespace

Recommendation recommend(std::span<const Arrival> arrivals, std::span<const core::Limit> limits,
                         std::int64_t fixed_window_peak, std::span<const Outcome> outcomes,
                         bool waits) {
  using core::Algorithm;
  Recommendation shaped = from_the_shape(arrivals, limits, fixed_window_peak);
  const core::Limit& reference = limits.front();
  std::optional<std::string> why_not = ruled_out(shaped.algorithm, outcomes, reference, waits);
  if (!why_not) {
    return shaped;
  }
  std::int64_t log_bytes = largest_log_bytes(limits);
  // What the table asks for is a limit kept: the exact one, unless its log is too large and
  // the approximation kept to the limit too.
  Algorithm chosen = Algorithm::sliding_log;
  if (log_bytes > k_affordable_log_bytes && shaped.algorithm != Algorithm::sliding_window &&
      !ruled_out(Algorithm::sliding_window, outcomes, reference, waits)) {
    chosen = Algorithm::sliding_window;
  }
  auto row = std::find_if(outcomes.begin(), outcomes.end(),
                          [&](const Outcome& outcome) { return outcome.algorithm == chosen; });
  std::string keeps = row == outcomes.end()
                          ? std::string("is exact")
                          : fmt::format("kept to {} in one {}{}", row->peak_per_period,
                                        core::format_seconds(reference.rate.period),
                                        waits && row->denied == 0 ? " and denied none" : "");
  std::string cost = chosen == Algorithm::sliding_log
                         ? fmt::format("; its log needs at most {} bytes", log_bytes)
                         : "";
  return {chosen, fmt::format("the shape of the arrivals points to {}, but {}; {} {}{}",
                              core::algorithm_name(shaped.algorithm), *why_not,
                              core::algorithm_name(chosen), keeps, cost)};
}

namespace {

Recommendation from_the_shape(std::span<const Arrival> arrivals,
                              std::span<const core::Limit> limits, std::int64_t fixed_window_peak) {
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

} // namespace

} // namespace ratelimit::sim
