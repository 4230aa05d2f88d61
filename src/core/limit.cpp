#include "core/limit.hpp"

#include <fmt/format.h>

namespace ratelimit::core {

std::optional<std::string> check_limits(Algorithm algorithm, std::span<const Limit> limits,
                                        std::int64_t cost, bool burst_given) {
  if (limits.empty()) {
    return "no rate given; expected a rate N/PERIOD, e.g. 10/s";
  }
  if (burst_given && !takes_burst(algorithm)) {
    return fmt::format("a burst does not apply to {}; it sets the capacity of token-bucket "
                       "and the queue depth of leaky-bucket",
                       algorithm_name(algorithm));
  }
  if (cost < 1) {
    return fmt::format("invalid cost {}: expected a whole number of at least 1", cost);
  }
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const Limit& limit = limits[i];
    if (limit.burst < 1) {
      return fmt::format("invalid burst {}: expected a whole number of at least 1", limit.burst);
    }
    // A bucket's times stay far from the int64 range: at most 20 years of refill.
    Nanos interval = limit.rate.emission_interval();
    if (takes_burst(algorithm) && Wide{limit.burst} * interval > 2 * k_max_duration) {
      return fmt::format("invalid burst {}: {} would take more than 20 years to refill it; "
                         "expected at most {}",
                         limit.burst, format_rate(limit.rate), 2 * k_max_duration / interval);
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (limits[j].rate.period == limit.rate.period) {
        return fmt::format("two rates with the same period ({} and {}); give one rate per period",
                           format_rate(limits[j].rate), format_rate(limit.rate));
      }
    }
    std::int64_t max_cost = limit.max_cost(algorithm);
    if (cost > max_cost) {
      return fmt::format("cost {} can never be granted: {} {} holds at most {}", cost,
                         algorithm_name(algorithm), format_rate(limit.rate), max_cost);
    }
  }
  return std::nullopt;
}

Rate adaptive_ceiling(std::span<const Limit> limits) {
  Rate slowest = limits.front().rate;
  for (const Limit& limit : limits) {
    if (Wide{limit.rate.count} * slowest.period < Wide{slowest.count} * limit.rate.period) {
      slowest = limit.rate;
    }
  }
  return slowest;
}

} // namespace ratelimit::core
