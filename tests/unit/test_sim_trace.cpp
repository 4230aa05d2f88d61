#include "sim/trace.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace ratelimit;
using sim::Arrival;

namespace {

std::string trace_error(std::string_view text) {
  auto trace = sim::parse_trace(text);
  REQUIRE_FALSE(trace.ok());
  return trace.error();
}

} // namespace

TEST_CASE("sim::parse_seconds converts decimals to nanoseconds exactly") {
  CHECK(*sim::parse_seconds("0") == 0);
  CHECK(*sim::parse_seconds("12") == 12'000'000'000);
  CHECK(*sim::parse_seconds("0.1") == 100'000'000);
  CHECK(*sim::parse_seconds("0.3") == 300'000'000); // 0.1 + 0.2 in binary is not 0.3
  CHECK(*sim::parse_seconds("1.000000001") == 1'000'000'001);
  CHECK(*sim::parse_seconds(".5") == 500'000'000);
  CHECK(*sim::parse_seconds("7.") == 7'000'000'000);
  CHECK(*sim::parse_seconds("1.5e-3") == 1'500'000);
  CHECK(*sim::parse_seconds("2E2") == 200'000'000'000);
  CHECK(*sim::parse_seconds("1e+1") == 10'000'000'000);
  CHECK(*sim::parse_seconds("0.30000000000000004") == 300'000'000);
}

TEST_CASE("sim::parse_seconds rounds digits below the nanosecond to the nearest") {
  CHECK(*sim::parse_seconds("12.3456789015") == 12'345'678'902);
  CHECK(*sim::parse_seconds("12.3456789014") == 12'345'678'901);
  CHECK(*sim::parse_seconds("1e-30") == 0);
}

TEST_CASE("sim::parse_seconds rejects what is not a time from the start") {
  std::string too_long(40, '1');
  for (const char* bad : {"", "-1", "+1", "abc", "1s", "1,5", "1.2.3", "1e", "e5", "nan", "inf",
                          "0x10", "1e99999", "400000000", too_long.c_str()}) {
    CAPTURE(bad);
    auto parsed = sim::parse_seconds(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().find("expected a decimal number of seconds") != std::string::npos);
  }
}

TEST_CASE("sim::parse_trace reads SECONDS [COST] lines, skipping blanks and comments") {
  auto trace = sim::parse_trace("# a trace\n"
                                "0\n"
                                "\n"
                                "0.25 3\n"
                                "   \t  \n"
                                "  0.25\t2   # same instant, cost 2\n"
                                "1.5\r\n"
                                "# the end\n"
                                "2 1");
  REQUIRE(trace.ok());
  std::vector<Arrival> expected = {
      {0, 1}, {250'000'000, 3}, {250'000'000, 2}, {1'500'000'000, 1}, {2'000'000'000, 1}};
  CHECK(trace->arrivals == expected);
  CHECK(trace->max_cost == 3);
  CHECK(trace->max_cost_line == 4);
}

TEST_CASE("sim::parse_trace names the line number of a bad line") {
  CHECK(trace_error("0\n1\nabc\n").rfind("line 3: invalid seconds \"abc\"", 0) == 0);
  CHECK(trace_error("# c\n\n-1\n").rfind("line 3: invalid seconds \"-1\": it is negative", 0) == 0);
  CHECK(trace_error("1 0\n").rfind("line 1: invalid cost \"0\"", 0) == 0);
  CHECK(trace_error("1\n1 x\n").rfind("line 2: invalid cost \"x\"", 0) == 0);
  CHECK(trace_error("1\n2\n3 -2\n").rfind("line 3: invalid cost \"-2\"", 0) == 0);
  CHECK(trace_error("1 99999999999999999999\n").rfind("line 1: invalid cost", 0) == 0);
  CHECK(trace_error("0\n1 2 3\n").rfind("line 2: \"1 2 3\" has more than two fields", 0) == 0);
  CHECK(trace_error("0\n2\n1\n").rfind("line 3: 1 comes before the previous arrival", 0) == 0);
  CHECK(trace_error("0\r\n\r\n1.5x\r\n").rfind("line 3: invalid seconds \"1.5x\"", 0) == 0);
}

TEST_CASE("sim::parse_trace refuses a trace without arrivals") {
  CHECK(trace_error("").rfind("no arrivals", 0) == 0);
  CHECK(trace_error("# only a comment\n\n").rfind("no arrivals", 0) == 0);
}
