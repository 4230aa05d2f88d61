#pragma once

#include <cstdint>

namespace ratelimit::util {

// CLOCK_REALTIME in nanoseconds since the Unix epoch; INT64_MAX past the year 2262.
std::int64_t realtime_nanos();

// CLOCK_MONOTONIC in nanoseconds, for measuring intervals.
std::int64_t monotonic_nanos();

} // namespace ratelimit::util
