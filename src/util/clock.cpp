#include "util/clock.hpp"

#include <ctime>
#include <limits>

namespace ratelimit::util {

namespace {

std::int64_t read_clock(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  // Past the year 2262 the nanoseconds do not fit: the latest time stands for them, which
  // the stores refuse as beyond their range.
  constexpr std::int64_t k_max_seconds =
      std::numeric_limits<std::int64_t>::max() / 1'000'000'000 - 1;
  if (ts.tv_sec > k_max_seconds) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace

std::int64_t realtime_nanos() {
  return read_clock(CLOCK_REALTIME);
}

std::int64_t monotonic_nanos() {
  return read_clock(CLOCK_MONOTONIC);
}

} // namespace ratelimit::util
