#include "core/backoff.hpp"

#include <doctest/doctest.h>
#include <limits>

using namespace ratelimit::core;

namespace {
constexpr Nanos k_s = k_nanos_per_second;
} // namespace

TEST_CASE("core::backoff_delay doubles from the base up to the cap, without jitter") {
  CHECK(backoff_delay(k_s, 300 * k_s, 0, 0.0) == k_s);
  CHECK(backoff_delay(k_s, 300 * k_s, 1, 0.0) == 2 * k_s);
  CHECK(backoff_delay(k_s, 300 * k_s, 2, 0.0) == 4 * k_s);
  CHECK(backoff_delay(k_s, 300 * k_s, 8, 0.0) == 256 * k_s);
  CHECK(backoff_delay(k_s, 300 * k_s, 9, 0.0) == 300 * k_s);
  CHECK(backoff_delay(k_s, 300 * k_s, 1000, 0.0) == 300 * k_s);
  CHECK(backoff_delay(k_s, k_s, 3, 0.0) == k_s);
}

TEST_CASE("core::backoff_delay's jitter lengthens by up to half, never beyond the cap") {
  CHECK(backoff_delay(k_s, 300 * k_s, 0, 0.5) == 1250 * k_nanos_per_milli);
  CHECK(backoff_delay(2 * k_s, 300 * k_s, 1, 0.999999) < 6 * k_s);
  CHECK(backoff_delay(2 * k_s, 300 * k_s, 1, 0.999999) > 5999 * k_nanos_per_milli);
  CHECK(backoff_delay(k_s, 1500 * k_nanos_per_milli, 0, 0.999) == 1499500 * k_nanos_per_micro);
  CHECK(backoff_delay(k_s, 1200 * k_nanos_per_milli, 0, 0.999) == 1200 * k_nanos_per_milli);
  CHECK(backoff_delay(k_s, 300 * k_s, 20, 0.9) == 300 * k_s);
  // Out-of-range draws are clamped, and nothing overflows near the largest durations.
  CHECK(backoff_delay(k_s, 300 * k_s, 0, -1.0) == k_s);
  constexpr Nanos k_huge = std::numeric_limits<Nanos>::max() / 2;
  CHECK(backoff_delay(k_huge, 2 * k_huge, 1, 1.0) == 2 * k_huge);
  CHECK(backoff_delay(k_s, k_huge, 62, 0.5) == k_huge);
}
