#pragma once

#include "core/rate.hpp"
#include "core/time.hpp"

#include <cstdint>

namespace ratelimit::core {

// An adaptive rate: the `-r` rate is a ceiling, and the rate a key grants at is learned from
// the server's answers. The law is CUBIC (RFC 9438), as the AWS SDKs' adaptive retry mode
// drives its token bucket with it: a throttle remembers the rate it came at as W_max and cuts
// to beta = 0.7 of it; from the cut the rate grows back as a cubic of the time since, flat
// near W_max (the rate that last failed) and steep away from it.
//
// Two choices differ from the SDKs', for a key shared by processes that may be few and slow:
// - W_max is the rate of successes measured over the last second or more, when it is below
//   the rate the key grants at: a key granting 50/s to workers that get 5/s through learns
//   5/s from one throttle, not from seven cuts of 0.7, and a lone slow worker's throttle cuts
//   from what it sends, not from a ceiling it never reached.
// - The cubic is scaled to W_max: the rate is back at W_max `K` after the cut, K fixed in
//   time and grants (see adaptive_recovery), where the SDKs fix C = 0.4 request/s^3 for
//   any rate. The same law then serves 1/min and 10000/s.
//
// Rates are held in micro-requests per second (`k_micro_per_second` per request per
// second); times in nanoseconds since the epoch, and every duration the law derives is a
// whole number of microseconds, every intermediate value below 2^53 or capped before it: the
// Redis script, which counts microseconds in doubles, computes the same integers
// (src/store/redis/lua/adaptive_rate.lua). All of it fits in six integers.
struct AdaptiveState {
  // The rate the last cut remembered (W_max), in micro-requests per second; 0: never cut,
  // the key grants at its ceiling.
  std::int64_t max_rate = 0;
  // When the last cut came; 0: never.
  Nanos cut_at = 0;
  // Successes counted since `measured_from`, in 1/k_success_unit of a success.
  std::int64_t successes = 0;
  Nanos measured_from = 0;
  // The latest time the state has seen: a clock stepped back is read as this.
  Nanos clock = 0;
  // The earliest slot of the next grant: grants are spaced at the effective rate
  // (adaptive_interval), as a leaky bucket without burst spaces them.
  Nanos next_slot = 0;

  friend bool operator==(const AdaptiveState&, const AdaptiveState&) = default;
};

enum class AdaptiveEvent {
  // A 429 or 503 answer, or a `--backoff-on` exit status.
  throttled,
  // An answer that was not a throttle.
  succeeded,
};

inline constexpr std::int64_t k_micro_per_second = 1'000'000;
// The fastest rate the law represents: 10^9 requests per second (10^15 below 2^53). A
// faster ceiling is read as this.
inline constexpr std::int64_t k_max_adaptive_rate = 1'000'000'000 * k_micro_per_second;
inline constexpr std::int64_t k_success_unit = 1024;
// The most successes counted, in k_success_unit: 2^30 of them.
inline constexpr std::int64_t k_max_successes = std::int64_t{1} << 40;
// The longest time between grants the law counts in: a slower rate's rounds and recovery
// are counted as if it were one an hour.
inline constexpr Nanos k_max_interval = 3600 * k_nanos_per_second;

// The constants of the law, as fractions.
inline constexpr std::int64_t k_cut_numerator = 7; // beta = 7/10, the SDKs' and RFC 9438's
inline constexpr std::int64_t k_cut_denominator = 10;
// The floor: 1/100 of the ceiling (0.5/s under 50/s, the SDKs' least rate), and at least one
// request a minute unless the ceiling itself is slower.
inline constexpr std::int64_t k_floor_divisor = 100;
inline constexpr std::int64_t k_least_floor = k_micro_per_second / 60;
// A round: the time a throttle of the same overload may still arrive after the cut, the
// longest of a second (a request's round trip) and the time the cut rate takes for
// k_round_grants grants (one per worker of a pool of eight). Throttles within a round of the
// last cut are one overload, and cut once.
// Successes are believed once counted for as long as a round at the key's current rate.
inline constexpr Nanos k_least_round = k_nanos_per_second;
inline constexpr std::int64_t k_round_grants = 8;
// K, the time from a cut back to W_max: the longest of k_least_recovery and the time W_max
// takes for k_recovery_grants grants.
inline constexpr Nanos k_least_recovery = 6 * k_nanos_per_second;
inline constexpr std::int64_t k_recovery_grants = 32;
// The cubic's argument |t - K| / K in fixed point, 2^k_fraction_bits for 1; capped at 2^10,
// where the rate is a thousand times W_max and the ceiling has long bound it.
inline constexpr int k_fraction_bits = 20;
inline constexpr std::int64_t k_max_fraction = std::int64_t{1} << (k_fraction_bits + 10);
// Successes counted over more than 4 measuring windows are folded into the last 2, as a
// rate: a throttle cuts from the rate the server let through lately, not from an average
// since the last cut that the slow start after it lowers; hours of idleness fold away to
// less than one success, which is not believed, and successes counted from longer ago than
// 2^40 microseconds (12.7 days) are forgotten outright.
inline constexpr std::int64_t k_windows_kept = 2;
inline constexpr std::int64_t k_windows_before_folding = 4;
inline constexpr Nanos k_longest_measure = (Nanos{1} << 40) * k_nanos_per_micro;
// Micro-requests per second times microseconds per second: a rate of `r` micro-requests per
// second spaces its grants k_rate_scale_micros / r microseconds apart.
inline constexpr std::int64_t k_rate_scale_micros = k_micro_per_second * k_micro_per_second;

// `rate` in micro-requests per second, at most k_max_adaptive_rate.
std::int64_t micro_rate(const Rate& rate);

// The lowest rate the key may be cut to under `ceiling`, in micro-requests per second.
std::int64_t adaptive_floor(const Rate& ceiling);

// K: how long after a cut from `max_rate` (micro-requests per second) the rate is back at it.
Nanos adaptive_recovery(std::int64_t max_rate);

// The rate `state` grants at, at `now`, under `ceiling`, in micro-requests per second:
// the ceiling before any cut, then the cubic from the last cut, within [floor, ceiling].
// Never lower at a later `now`, and a `now` before `state.clock` is read as it.
std::int64_t effective_micro_rate(const AdaptiveState& state, const Rate& ceiling, Nanos now);

// The time a grant of `cost` takes at the rate `state` grants at, at `now`, under
// `ceiling`: a whole number of microseconds per unit of cost, rounded up, at most
// k_max_duration. The next grant's slot is this much after the last one's.
Nanos adaptive_interval(const AdaptiveState& state, const Rate& ceiling, Nanos now,
                        std::int64_t cost);

// Until when `state` holds something a fresh key's would not: the next grant's slot, and
// 8 K after a cut (by then the cubic has passed any ceiling up to 100 times the rate it cut
// from, and the floor keeps the rate it cuts from above 1/100 of the ceiling). 0: nothing.
Nanos adaptive_until(const AdaptiveState& state);

// The same as a Rate the limits take: exactly the ceiling when the key is at it, else a
// count per 10^6 seconds (fewer digits for fast rates), rounded down, never below one per
// 10^6 seconds.
Rate effective_rate(const AdaptiveState& state, const Rate& ceiling, Nanos now);

// The state after `event` at `now` under `ceiling`. A throttle cuts unless it falls within a
// round of the last cut; a success is counted towards the measured rate. Pure: the only
// time is `now` (a `now` before `state.clock` is read as it).
AdaptiveState adapt(const AdaptiveState& state, const Rate& ceiling, AdaptiveEvent event,
                    Nanos now);

} // namespace ratelimit::core
