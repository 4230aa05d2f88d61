#pragma once

#include "core/result.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace ratelimit::core {

// `count` requests per `period`.
struct Rate {
  std::int64_t count = 0;
  Nanos period = 0;

  // The time one unit of cost takes at this rate, rounded up to a whole nanosecond so that
  // rounding can only ever make a limit stricter.
  Nanos emission_interval() const { return ceil_div(period, count); }

  friend bool operator==(const Rate&, const Rate&) = default;
};

inline constexpr std::int64_t k_max_count = 1'000'000'000'000; // 10^12
inline constexpr Nanos k_max_duration = 10LL * 366 * 24 * 3600 * k_nanos_per_second;

// Parses `N/PERIOD`: `10/s`, `100/min`, `3/1.5s`, `1/250ms`, `1000/day`.
Result<Rate> parse_rate(std::string_view text);

// Parses a duration with the units of a rate's period; a bare number means seconds:
// `1.5s`, `250ms`, `2m`, `0`, `30`.
Result<Nanos> parse_duration(std::string_view text);

// `10/s`, `3/1500ms`, `1/2h`: the shortest form that names `rate` exactly.
std::string format_rate(const Rate& rate);

// `0.35s`, `12s`: seconds with at most 3 decimals, rounded up, for messages.
std::string format_seconds(Nanos duration);

// `0.35s`, `12s` up to a minute, then whole seconds rounded up: `1m05s`, `23h59m59s`; as
// the countdown shows them.
std::string format_duration(Nanos duration);

} // namespace ratelimit::core
