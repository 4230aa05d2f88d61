#include "sim/trace.hpp"

#include "core/rate.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace ratelimit::sim {

namespace {

using core::Nanos;
using core::Wide;

constexpr std::string_view k_line_form =
    "expected SECONDS [COST], e.g. \"12.5\" or \"12.5 3\" (seconds from the start, then a "
    "whole number)";
// More significant digits than any time in nanoseconds needs; keeps the mantissa in 128 bits.
constexpr int k_max_digits = 36;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

Wide pow10(int exponent) {
  Wide result = 1;
  for (int i = 0; i < exponent; ++i) {
    result *= 10;
  }
  return result;
}

std::string_view shown(std::string_view text) {
  return text.substr(0, 64);
}

} // namespace

core::Result<Nanos> parse_seconds(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return core::Result<Nanos>::failure(fmt::format(
        "invalid seconds \"{}\": {}; expected a decimal number of seconds from the start, e.g. "
        "0.25 or 12 or 1.5e-3",
        shown(text), why));
  };
  if (!text.empty() && text.front() == '-') {
    return fail("it is negative");
  }
  Wide mantissa = 0;
  int digits = 0;
  int scale = 0; // decimals read after the point
  bool any_digit = false;
  bool seen_point = false;
  std::size_t i = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (is_digit(c)) {
      any_digit = true;
      if (mantissa != 0 || c != '0') {
        if (++digits > k_max_digits) {
          return fail("too many digits");
        }
      }
      mantissa = mantissa * 10 + (c - '0');
      scale += seen_point ? 1 : 0;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!any_digit) {
    return fail("not a number");
  }
  int exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
      ++i;
    }
    std::size_t start = i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (i - start >= 4) {
        return fail("the exponent is out of range");
      }
      exponent = exponent * 10 + (text[i] - '0');
    }
    if (i == start) {
      return fail("not a number");
    }
    exponent = negative ? -exponent : exponent;
  }
  if (i != text.size()) {
    return fail("not a number");
  }
  // seconds = mantissa * 10^(exponent - scale), so nanoseconds = mantissa * 10^shift.
  int shift = 9 + exponent - scale;
  auto too_late = [&] { return fail("it is more than 10 years from the start"); };
  if (mantissa == 0) {
    return Nanos{0};
  }
  if (shift >= 0) {
    if (shift > 18 || mantissa > Wide{core::k_max_duration} / pow10(shift)) {
      return too_late();
    }
    return static_cast<Nanos>(mantissa * pow10(shift));
  }
  if (-shift > k_max_digits) {
    return Nanos{0}; // far below half a nanosecond
  }
  Wide divisor = pow10(-shift);
  Wide nanos = (mantissa + divisor / 2) / divisor;
  if (nanos > core::k_max_duration) {
    return too_late();
  }
  return static_cast<Nanos>(nanos);
}

core::Result<Trace> parse_trace(std::string_view text) {
  Trace trace;
  trace.arrivals.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  std::size_t line_number = 0;
  auto fail = [&](const std::string& why) {
    return core::Result<Trace>::failure(fmt::format("line {}: {}", line_number, why));
  };
  while (!text.empty()) {
    ++line_number;
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (std::size_t comment = line.find('#'); comment != std::string_view::npos) {
      line = line.substr(0, comment);
    }
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    std::string_view fields[3];
    std::size_t count = 0;
    for (std::size_t i = 0; i < line.size();) {
      if (is_blank(line[i])) {
        ++i;
        continue;
      }
      std::size_t start = i;
      while (i < line.size() && !is_blank(line[i])) {
        ++i;
      }
      if (count == 3) {
        break;
      }
      fields[count++] = line.substr(start, i - start);
    }
    if (count == 0) {
      continue;
    }
    if (count > 2) {
      return fail(fmt::format("\"{}\" has more than two fields; {}", shown(line), k_line_form));
    }
    auto at = parse_seconds(fields[0]);
    if (!at) {
      return fail(at.error());
    }
    Arrival arrival{*at, 1};
    if (count == 2) {
      std::string_view cost = fields[1];
      auto [stop, error] = std::from_chars(cost.data(), cost.data() + cost.size(), arrival.cost);
      if (error != std::errc() || stop != cost.data() + cost.size() || arrival.cost < 1 ||
          arrival.cost > core::k_max_count) {
        return fail(fmt::format("invalid cost \"{}\": expected a whole number from 1 to {}",
                                shown(cost), core::k_max_count));
      }
    }
    if (!trace.arrivals.empty() && arrival.at < trace.arrivals.back().at) {
      return fail(fmt::format("{} comes before the previous arrival; a trace lists arrivals in "
                              "time order (sort -n sorts one)",
                              shown(fields[0])));
    }
    if (arrival.cost > trace.max_cost) {
      trace.max_cost = arrival.cost;
      trace.max_cost_line = line_number;
    }
    trace.arrivals.push_back(arrival);
  }
  if (trace.arrivals.empty()) {
    return core::Result<Trace>::failure(
        "no arrivals; expected one line per arrival, SECONDS [COST]");
  }
  return trace;
}

} // namespace ratelimit::sim
