#include "core/rate.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace ratelimit::core;

namespace {

constexpr Nanos k_ms = k_nanos_per_milli;
constexpr Nanos k_s = k_nanos_per_second;

Rate rate(std::string_view text) {
  auto parsed = parse_rate(text);
  INFO("parse_rate(\"", std::string(text), "\")");
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  return *parsed;
}

std::string rate_error(std::string_view text) {
  auto parsed = parse_rate(text);
  INFO("parse_rate(\"", std::string(text), "\")");
  REQUIRE_FALSE(parsed.ok());
  return parsed.error();
}

Nanos duration(std::string_view text) {
  auto parsed = parse_duration(text);
  INFO("parse_duration(\"", std::string(text), "\")");
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  return *parsed;
}

std::string duration_error(std::string_view text) {
  auto parsed = parse_duration(text);
  INFO("parse_duration(\"", std::string(text), "\")");
  REQUIRE_FALSE(parsed.ok());
  return parsed.error();
}

} // namespace

TEST_CASE("core::parse_rate reads the documented forms") {
  CHECK(rate("10/s") == Rate{10, k_s});
  CHECK(rate("100/min") == Rate{100, 60 * k_s});
  CHECK(rate("5000/h") == Rate{5000, 3600 * k_s});
  CHECK(rate("3/1.5s") == Rate{3, 1500 * k_ms});
  CHECK(rate("1/250ms") == Rate{1, 250 * k_ms});
  CHECK(rate("1000/day") == Rate{1000, 86400 * k_s});
  CHECK(rate("7/.5s") == Rate{7, 500 * k_ms});
  CHECK(rate("2/3m") == Rate{2, 180 * k_s});
}

TEST_CASE("core::parse_rate accepts every unit name and its plural") {
  const std::pair<const char*, Nanos> units[] = {
      {"ms", k_ms},           {"msec", k_ms},       {"msecs", k_ms},       {"millisecond", k_ms},
      {"milliseconds", k_ms}, {"s", k_s},           {"sec", k_s},          {"secs", k_s},
      {"second", k_s},        {"seconds", k_s},     {"m", 60 * k_s},       {"min", 60 * k_s},
      {"mins", 60 * k_s},     {"minute", 60 * k_s}, {"minutes", 60 * k_s}, {"h", 3600 * k_s},
      {"hr", 3600 * k_s},     {"hrs", 3600 * k_s},  {"hour", 3600 * k_s},  {"hours", 3600 * k_s},
      {"d", 86400 * k_s},     {"day", 86400 * k_s}, {"days", 86400 * k_s},
  };
  for (const auto& unit : units) {
    const auto& [name, length] = unit;
    CAPTURE(unit.first);
    CHECK(rate(std::string("4/") + name) == Rate{4, length});
    CHECK(rate(std::string("4/2") + name) == Rate{4, 2 * length});
  }
}

TEST_CASE("core::parse_rate rounds a fractional period up to a whole nanosecond") {
  // 1/3 ms is 333333.33 ns: rounding up can only make the limit stricter.
  CHECK(rate("1/0.000333333333ms").period == 334);
  CHECK(rate("10/1.0000000001s").period == k_s + 1);
}

TEST_CASE("core::parse_rate rejects a zero count") {
  CHECK(rate_error("0/s").find("the count is zero") != std::string::npos);
}

TEST_CASE("core::parse_rate rejects a zero period") {
  CHECK(rate_error("5/0s").find("the period is zero") != std::string::npos);
  CHECK(rate_error("5/0.0ms").find("the period is zero") != std::string::npos);
}

TEST_CASE("core::parse_rate rejects negative numbers") {
  CHECK(rate_error("-5/s").find("the count is negative") != std::string::npos);
  CHECK(rate_error("5/-1s").find("the period is negative") != std::string::npos);
}

TEST_CASE("core::parse_rate rejects an overflowing or absurd rate") {
  CHECK(rate_error("99999999999999999999/s").find("the count is above 1000000000000") !=
        std::string::npos);
  CHECK(rate_error("1000000000001/day").find("the count is above") != std::string::npos);
  CHECK(rate_error("1/3661d").find("longer than 10 years") != std::string::npos);
  CHECK(rate_error("1/99999999999999999999d").find("longer than 10 years") != std::string::npos);
  CHECK(rate_error("2000/1us").find("unknown unit") != std::string::npos);
  CHECK(rate_error("2000/1000000ns").find("unknown unit") != std::string::npos);
  CHECK(rate_error("1001/0.001ms").find("more than one request per nanosecond") !=
        std::string::npos);
}

TEST_CASE("core::parse_rate rejects an unknown unit and names the accepted form") {
  std::string error = rate_error("5/parsec");
  CHECK(error == "invalid rate \"5/parsec\": unknown unit \"parsec\"; expected N/PERIOD, e.g. "
                 "10/s, 100/min, 3/1.5s, 1/250ms");
  CHECK(rate_error("5/S").find("unknown unit \"S\"") != std::string::npos);
  CHECK(rate_error("5/1.5").find("no unit") != std::string::npos);
}

TEST_CASE("core::parse_rate rejects malformed text") {
  for (const char* text :
       {"", "10", "10/", "/s", "ten/s", "1.5/s", "+5/s", " 5/s", "5/s ", "5 /s", "5/ s", "5/1.s",
        "5/1..5s", "5/./s", "1e3/s", "5/s/s", "0x10/s", "5//s"}) {
    CAPTURE(text);
    auto parsed = parse_rate(text);
    CHECK_FALSE(parsed.ok());
    if (!parsed.ok()) {
      CHECK(parsed.error().find("invalid rate") == 0);
      CHECK(parsed.error().find("expected N/PERIOD") != std::string::npos);
    }
  }
}

TEST_CASE("core::parse_rate refuses numbers too long to compute with exactly") {
  // Twenty digits still parse; more would overflow the 128-bit arithmetic.
  CHECK(rate("1/0.00000000000000000001d").period == 1);
  CHECK_FALSE(parse_rate("1/0.000000000000000000001d").ok());
  CHECK_FALSE(parse_rate("1/1.000000000000000000000000000000s").ok());
  CHECK_FALSE(parse_rate("1/100000000000000000000000000000000000000000s").ok());
}

TEST_CASE("core::parse_duration reads seconds by default and every unit") {
  CHECK(duration("30") == 30 * k_s);
  CHECK(duration("0") == 0);
  CHECK(duration("0s") == 0);
  CHECK(duration("1.5s") == 1500 * k_ms);
  CHECK(duration("250ms") == 250 * k_ms);
  CHECK(duration("2m") == 120 * k_s);
  CHECK(duration("2min") == 120 * k_s);
  CHECK(duration("1h") == 3600 * k_s);
  CHECK(duration("3hours") == 3 * 3600 * k_s);
  CHECK(duration("1d") == 86400 * k_s);
  CHECK(duration("2days") == 2 * 86400 * k_s);
  CHECK(duration("0.5sec") == 500 * k_ms);
  CHECK(duration(".25") == 250 * k_ms);
  CHECK(duration("0.0000000001") == 1); // rounded up to a nanosecond
}

TEST_CASE("core::parse_duration rejects negative and malformed durations") {
  CHECK(duration_error("-1s").find("it is negative") != std::string::npos);
  CHECK(duration_error("-0").find("it is negative") != std::string::npos);
  CHECK(duration_error("5parsec").find("unknown unit \"parsec\"") != std::string::npos);
  CHECK(duration_error("1.5.5s").find("unknown unit") != std::string::npos);
  CHECK(duration_error("3661d").find("longer than 10 years") != std::string::npos);
  for (const char* text : {"", "s", "abc", "1.", ".", " 1", "1 s", "+1s", "1e3", "0.1.s"}) {
    CAPTURE(text);
    auto parsed = parse_duration(text);
    CHECK_FALSE(parsed.ok());
    if (!parsed.ok()) {
      CHECK(parsed.error().find("invalid duration") == 0);
      CHECK(parsed.error().find("expected a number with an optional unit") != std::string::npos);
    }
  }
}

TEST_CASE("core::format_rate names a rate in the shortest exact form") {
  CHECK(format_rate(Rate{10, k_s}) == "10/s");
  CHECK(format_rate(Rate{100, 60 * k_s}) == "100/min");
  CHECK(format_rate(Rate{5000, 3600 * k_s}) == "5000/h");
  CHECK(format_rate(Rate{1000, 86400 * k_s}) == "1000/d");
  CHECK(format_rate(Rate{3, 1500 * k_ms}) == "3/1500ms");
  CHECK(format_rate(Rate{3, 90 * k_s}) == "3/90s");
  CHECK(format_rate(Rate{1, 250 * k_ms}) == "1/250ms");
  for (const char* text : {"10/s", "100/min", "3/1.5s", "1/250ms", "1000/day", "7/90s"}) {
    CAPTURE(text);
    CHECK(rate(format_rate(rate(text))) == rate(text));
  }
}

TEST_CASE("core::format_seconds rounds up to the millisecond") {
  CHECK(format_seconds(0) == "0s");
  CHECK(format_seconds(12 * k_s) == "12s");
  CHECK(format_seconds(350 * k_ms) == "0.35s");
  CHECK(format_seconds(1) == "0.001s");
  CHECK(format_seconds(1500 * k_ms + 1) == "1.501s");
}
