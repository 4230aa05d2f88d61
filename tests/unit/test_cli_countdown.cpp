#include "cli/countdown.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using cli::countdown_line;
using cli::fit_to_width;

namespace {

constexpr core::Nanos k_ms = core::k_nanos_per_milli;
constexpr core::Nanos k_s = core::k_nanos_per_second;

} // namespace

TEST_CASE("cli::countdown_line shows tenths of a second, rounded up, up to a minute") {
  CHECK(countdown_line(4'200 * k_ms, "\"api\"") == "waiting 4.2s for \"api\"");
  CHECK(countdown_line(4'101 * k_ms, "\"api\"") == "waiting 4.2s for \"api\"");
  CHECK(countdown_line(1, "\"k\"") == "waiting 0.1s for \"k\"");
  CHECK(countdown_line(59'950 * k_ms, "\"k\"") == "waiting 60.0s for \"k\"");
  CHECK(countdown_line(60 * k_s, "\"k\"") == "waiting 60.0s for \"k\"");
}

TEST_CASE("cli::countdown_line shows whole seconds beyond a minute") {
  CHECK(countdown_line(60 * k_s + 1, "\"k\"") == "waiting 1m01s for \"k\"");
  CHECK(countdown_line(65 * k_s, "\"k\"") == "waiting 1m05s for \"k\"");
  CHECK(countdown_line(3599 * k_s, "\"k\"") == "waiting 59m59s for \"k\"");
  CHECK(countdown_line(3600 * k_s, "\"k\"") == "waiting 1h00m00s for \"k\"");
  CHECK(countdown_line(26 * 3600 * k_s + 30 * k_s, "\"k\"") == "waiting 26h00m30s for \"k\"");
}

TEST_CASE("cli::fit_to_width cuts long lines without splitting a UTF-8 character") {
  CHECK(fit_to_width("waiting 1.0s", 40) == "waiting 1.0s");
  CHECK(fit_to_width("waiting 1.0s", 7) == "waiting");
  // "é" is two bytes: a cut in its middle drops it whole.
  CHECK(fit_to_width("ab\xc3\xa9", 3) == "ab");
  CHECK(fit_to_width("ab\xc3\xa9", 4) == "ab\xc3\xa9");
  CHECK(fit_to_width("ab\xe2\x82\xac", 4) == "ab");
}
