#include "util/clock.hpp"

#include <ctime>

namespace ratelimit::util {

namespace {

std::int64_t read_clock(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace

std::int64_t realtime_nanos() { return read_clock(CLOCK_REALTIME); }

std::int64_t monotonic_nanos() { return read_clock(CLOCK_MONOTONIC); }

} // namespace ratelimit::util
