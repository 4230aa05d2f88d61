#include "sim/arrival.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ratelimit::sim {

std::int64_t peak_per_period(std::span<const Arrival> events, core::Nanos period) {
  std::int64_t peak = 0;
  std::int64_t inside = 0;
  std::size_t first = 0;
  for (const Arrival& event : events) {
    inside += event.cost;
    while (event.at - events[first].at >= period) {
      inside -= events[first].cost;
      ++first;
    }
    peak = std::max(peak, inside);
  }
  return peak;
}

double gap_variation(std::span<const Arrival> arrivals) {
  if (arrivals.size() < 3) {
    return 0;
  }
  auto gaps = static_cast<double>(arrivals.size() - 1);
  double mean = static_cast<double>(arrivals.back().at - arrivals.front().at) / gaps;
  if (mean == 0) {
    return std::numeric_limits<double>::infinity();
  }
  double squares = 0;
  for (std::size_t i = 1; i < arrivals.size(); ++i) {
    double deviation = static_cast<double>(arrivals[i].at - arrivals[i - 1].at) - mean;
    squares += deviation * deviation;
  }
  return std::sqrt(squares / gaps) / mean;
}

} // namespace ratelimit::sim
