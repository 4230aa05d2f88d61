#pragma once

#include "core/result.hpp"
#include "sim/arrival.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

namespace ratelimit::sim {

// Arrivals read from a trace, in time order.
struct Trace {
  std::vector<Arrival> arrivals;
  // The largest cost and the line (from 1) that first asks for it, to name it when no limit
  // could ever grant it.
  std::int64_t max_cost = 0;
  std::size_t max_cost_line = 0;
};

// Parses seconds from the start of a trace as a decimal (`12`, `0.25`, `1.5e-3`) into
// nanoseconds, exactly: no binary floating point is involved, so 0.1 is 100000000 ns.
// Digits below the nanosecond are rounded to the nearest one. At most 10 years.
core::Result<core::Nanos> parse_seconds(std::string_view text);

// Parses a trace: one arrival per line, `SECONDS [COST]` separated by blanks, SECONDS from
// the start as a decimal, COST a whole number (default 1). Blank lines and everything from
// a `#` on are ignored; a trailing CR is allowed. Arrivals must be in time order. An error
// names the first bad line, as `line N: ...`. An empty trace is an error.
core::Result<Trace> parse_trace(std::string_view text);

} // namespace ratelimit::sim
