#include "core/bounds.hpp"

#include "core/rules.hpp"

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
  if (!is_time(state.clock) || !is_time(state.paused_until) || state.granted < 0 ||
      state.granted > k_max_window_count) {
    return false;
  }
  const std::array<SlotKind, 3>& kinds = info(state.algorithm).slots;
  auto within = [&](const LimitState& limit) {
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      if (kinds[i] == SlotKind::time ? !is_time(limit.slots[i]) : !is_total(limit.slots[i])) {
        return false;
      }
    }
    return is_limit(state.algorithm, limit.limit);
  };
  return std::all_of(state.limits.begin(), state.limits.end(), within) &&
         std::all_of(state.remembered.begin(), state.remembered.end(), within) &&
         (state.remembered.empty() || rules_for(state.algorithm).remembers_unnamed());
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
