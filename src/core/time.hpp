#pragma once

#include <cstdint>

namespace ratelimit::core {

// A point in time or a duration, in nanoseconds. Points count from the Unix epoch
// (CLOCK_REALTIME); int64 nanoseconds last until the year 2262.
using Nanos = std::int64_t;

inline constexpr Nanos k_nanos_per_micro = 1'000;
inline constexpr Nanos k_nanos_per_milli = 1'000'000;
inline constexpr Nanos k_nanos_per_second = 1'000'000'000;

// 128-bit arithmetic for products of counts and durations, which overflow int64
// (a million requests per day is already 1e6 * 8.64e13 ns).
__extension__ typedef __int128 Wide;

// `a / b` rounded towards positive infinity, for `a >= 0` and `b > 0`.
constexpr std::int64_t ceil_div(Wide a, Wide b) { return static_cast<std::int64_t>((a + b - 1) / b); }

// `a / b` rounded towards negative infinity, for `b > 0`.
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Whole milliseconds in `d`, rounded up: a caller told to retry after it is never early.
constexpr std::int64_t ceil_millis(Nanos d) { return d <= 0 ? 0 : ceil_div(d, k_nanos_per_milli); }

} // namespace ratelimit::core
