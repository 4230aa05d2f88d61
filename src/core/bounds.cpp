#include "core/bounds.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

bool is_time(Nanos time) {
  return time >= k_min_time && time <= k_max_time;
}

bool is_total(std::int64_t total) {
  return total >= 0 && total <= k_max_total;
}

// The same bounds as parse_rate and check_limits.
bool is_limit(Algorithm algorithm, const Limit& limit) {
  const Rate& rate = limit.rate;
  if (rate.count < 1 || rate.count > k_max_count || rate.period < rate.count ||
      rate.period > k_max_duration || limit.burst < 1) {
    return false;
  }
  if (takes_burst(algorithm)) {
    return Wide{limit.burst} * rate.emission_interval() <= 2 * k_max_duration;
  }
  return limit.burst <= k_max_count;
}

} // namespace

bool within_bounds(const KeyState& state) {
  if (!is_time(state.clock) || !is_time(state.paused_until)) {
    return false;
  }
  // Slot 0 is a time for every algorithm; slots 1 and 2 are times or unused for the
  // buckets, and counts for the windows and the log (costs granted, cumulative costs), but
  // for the fixed window's slot 2, the time of its latest grant.
  bool counts = !takes_burst(state.algorithm);
  bool third_is_time = !counts || state.algorithm == Algorithm::fixed_window;
  return std::all_of(state.limits.begin(), state.limits.end(), [&](const LimitState& limit) {
    return is_limit(state.algorithm, limit.limit) && is_time(limit.slots[0]) &&
           (counts ? is_total(limit.slots[1]) : is_time(limit.slots[1])) &&
           (third_is_time ? is_time(limit.slots[2]) : is_total(limit.slots[2]));
  });
}

bool fits_within_bounds(Algorithm algorithm, const Limit& limit,
                        const std::array<std::int64_t, 3>& slots, Nanos at, std::int64_t cost) {
  Wide next = Wide{std::max(at, slots[0])} + Wide{cost} * limit.rate.emission_interval();
  if (at > k_max_time || next > k_max_time) {
    return false;
  }
  return takes_burst(algorithm) || Wide{slots[1]} + cost <= k_max_total;
}

} // namespace ratelimit::core
