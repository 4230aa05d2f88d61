#include "core/adaptive_rate.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

// Nanoseconds per micro-request per second: a rate of `r` micro-requests per second spaces
// its grants k_rate_scale / r nanoseconds apart; in microseconds, k_rate_scale_micros / r.
constexpr Wide k_rate_scale = Wide{k_micro_per_second} * k_nanos_per_second;

// The time one grant takes at `rate` (micro-requests per second, >= 1): whole microseconds,
// rounded up, at most k_max_interval.
Nanos interval_of(std::int64_t rate) {
  return std::min(ceil_div(k_rate_scale_micros, rate) * k_nanos_per_micro, k_max_interval);
}

// How long successes must have been counted to be believed, at the key's `rate`.
Nanos measuring_window(std::int64_t rate) {
  return std::max(k_least_round, k_round_grants * interval_of(rate));
}

// The time after a cut to `max_rate` within which another throttle is the same overload.
Nanos round_after_cut(std::int64_t max_rate, const Rate& ceiling) {
  std::int64_t cut =
      std::max(adaptive_floor(ceiling),
               static_cast<std::int64_t>(Wide{max_rate} * k_cut_numerator / k_cut_denominator));
  return measuring_window(cut);
}

} // namespace

std::int64_t micro_rate(const Rate& rate) {
  Wide micro = Wide{rate.count} * k_rate_scale / rate.period;
  return static_cast<std::int64_t>(std::clamp<Wide>(micro, 1, k_max_adaptive_rate));
}

Nanos adaptive_interval(const AdaptiveState& state, const Rate& ceiling, Nanos now,
                        std::int64_t cost) {
  std::int64_t rate = effective_micro_rate(state, ceiling, now);
  Wide interval = Wide{ceil_div(k_rate_scale_micros, rate)} * k_nanos_per_micro * cost;
  return static_cast<Nanos>(std::min<Wide>(interval, k_max_duration));
}

Nanos adaptive_until(const AdaptiveState& state) {
  Nanos until = state.next_slot;
  if (state.max_rate != 0) {
    until = std::max(until, state.cut_at + 8 * adaptive_recovery(state.max_rate));
  }
  return until;
}

std::int64_t adaptive_floor(const Rate& ceiling) {
  std::int64_t top = micro_rate(ceiling);
  return std::max(top / k_floor_divisor, std::min(top, k_least_floor));
}

Nanos adaptive_recovery(std::int64_t max_rate) {
  Nanos grants = k_recovery_grants * interval_of(std::max<std::int64_t>(max_rate, 1));
  return std::max(k_least_recovery, grants);
}

std::int64_t effective_micro_rate(const AdaptiveState& state, const Rate& ceiling, Nanos now) {
  std::int64_t top = micro_rate(ceiling);
  if (state.max_rate == 0) {
    return top;
  }
  now = std::max(now, state.clock);
  Nanos since = std::max<Nanos>(now - state.cut_at, 0);
  Nanos recovery = adaptive_recovery(state.max_rate);
  // W(t) = W_max (1 + (1 - beta) ((t - K) / K)^3): beta W_max at the cut, W_max at K. The
  // term grows past the fastest rate only where the ceiling binds anyway: it stops there, so
  // that the script's doubles hold it.
  Wide distance = since >= recovery ? Wide{since} - recovery : Wide{recovery} - since;
  Wide fraction =
      std::min(distance * (Wide{1} << k_fraction_bits) / recovery, Wide{k_max_fraction});
  Wide term = Wide{state.max_rate} * (k_cut_denominator - k_cut_numerator) / k_cut_denominator;
  for (int i = 0; i < 3; ++i) {
    term = std::min<Wide>(term * fraction >> k_fraction_bits, k_max_adaptive_rate);
  }
  Wide rate = since >= recovery ? state.max_rate + term : state.max_rate - term;
  return static_cast<std::int64_t>(std::clamp<Wide>(rate, adaptive_floor(ceiling), top));
}

Rate effective_rate(const AdaptiveState& state, const Rate& ceiling, Nanos now) {
  std::int64_t rate = effective_micro_rate(state, ceiling, now);
  if (rate >= micro_rate(ceiling)) {
    return ceiling;
  }
  // A count per 10^6 s; a count beyond k_max_count loses digits, downwards, so that the
  // rounding only makes the key stricter.
  Rate result{rate, static_cast<Nanos>(k_rate_scale)};
  while (result.count > k_max_count) {
    result.count /= 10;
    result.period /= 10;
  }
  return result;
}

AdaptiveState adapt(const AdaptiveState& state, const Rate& ceiling, AdaptiveEvent event,
                    Nanos now) {
  AdaptiveState next = state;
  now = std::max(now, state.clock);
  next.clock = now;
  if (next.measured_from == 0) {
    next.measured_from = now;
  }
  std::int64_t current = effective_micro_rate(state, ceiling, now);
  Nanos window = measuring_window(current);
  Nanos measured_for = now - next.measured_from;
  if (measured_for > k_windows_before_folding * window) {
    Nanos kept = k_windows_kept * window; // whole microseconds, as the window
    next.successes = measured_for > k_longest_measure
                         ? 0
                         : static_cast<std::int64_t>(Wide{next.successes} * kept / measured_for);
    next.measured_from = now - kept;
    measured_for = kept;
  }
  if (event == AdaptiveEvent::succeeded) {
    next.successes = std::min(next.successes + k_success_unit, k_max_successes);
    return next;
  }
  if (state.max_rate != 0 && now - state.cut_at < round_after_cut(state.max_rate, ceiling)) {
    return next; // the same overload as the last cut
  }
  std::int64_t basis = current;
  if (measured_for >= window && next.successes >= k_success_unit) {
    Wide measured = Wide{next.successes} * k_rate_scale / (Wide{measured_for} * k_success_unit);
    basis = static_cast<std::int64_t>(std::min<Wide>(measured, current));
  }
  next.max_rate = std::clamp(basis, adaptive_floor(ceiling), micro_rate(ceiling));
  next.cut_at = now;
  next.successes = 0;
  next.measured_from = now;
  return next;
}

} // namespace ratelimit::core
