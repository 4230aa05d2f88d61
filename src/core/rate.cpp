#include "core/rate.hpp"

#include <array>
#include <charconv>
#include <fmt/format.h>

namespace ratelimit::core {

namespace {

constexpr std::string_view k_rate_form = "expected N/PERIOD, e.g. 10/s, 100/min, 3/1.5s, 1/250ms";
constexpr std::string_view k_duration_form = "expected a number with an optional unit "
                                             "(ms, s, m, h, d), e.g. 30, 1.5s, 250ms, 2m";

struct Unit {
  std::string_view name;
  Nanos length;
};

constexpr Nanos k_minute = 60 * k_nanos_per_second;
constexpr Nanos k_hour = 60 * k_minute;
constexpr Nanos k_day = 24 * k_hour;

constexpr std::array k_units{
    Unit{"ms", k_nanos_per_milli},
    Unit{"msec", k_nanos_per_milli},
    Unit{"msecs", k_nanos_per_milli},
    Unit{"millisecond", k_nanos_per_milli},
    Unit{"milliseconds", k_nanos_per_milli},
    Unit{"s", k_nanos_per_second},
    Unit{"sec", k_nanos_per_second},
    Unit{"secs", k_nanos_per_second},
    Unit{"second", k_nanos_per_second},
    Unit{"seconds", k_nanos_per_second},
    Unit{"m", k_minute},
    Unit{"min", k_minute},
    Unit{"mins", k_minute},
    Unit{"minute", k_minute},
    Unit{"minutes", k_minute},
    Unit{"h", k_hour},
    Unit{"hr", k_hour},
    Unit{"hrs", k_hour},
    Unit{"hour", k_hour},
    Unit{"hours", k_hour},
    Unit{"d", k_day},
    Unit{"day", k_day},
    Unit{"days", k_day},
};

const Unit* find_unit(std::string_view name) {
  for (const auto& unit : k_units) {
    if (unit.name == name) {
      return &unit;
    }
  }
  return nullptr;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A non-negative decimal number as an exact fraction: `mantissa / 10^scale`.
struct Decimal {
  Wide mantissa = 0;
  int scale = 0;
};

// At most this many significant digits and this many decimals, so that `mantissa * unit`
// and `k_max_duration * 10^scale` fit in 128 bits.
constexpr int k_max_digits = 20;

// Reads `[digits][.digits]` from the front of `text`; false when there is no digit at all
// or the number is absurdly long.
bool read_decimal(std::string_view& text, Decimal& out) {
  std::size_t i = 0;
  bool any_digit = false;
  bool seen_point = false;
  int significant = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (is_digit(c)) {
      any_digit = true;
      if (out.mantissa != 0 || c != '0') {
        ++significant;
      }
      out.mantissa = out.mantissa * 10 + (c - '0');
      if (seen_point) {
        ++out.scale;
      }
      if (significant > k_max_digits || out.scale > k_max_digits) {
        return false;
      }
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!any_digit || (seen_point && text[i - 1] == '.')) {
    return false;
  }
  text.remove_prefix(i);
  return true;
}

Wide pow10(int exponent) {
  Wide result = 1;
  for (int i = 0; i < exponent; ++i) {
    result *= 10;
  }
  return result;
}

// `number * unit` in nanoseconds, rounded up; -1 when above the largest duration.
Nanos scale_to_nanos(const Decimal& number, Nanos unit) {
  Wide divisor = pow10(number.scale);
  Wide limit = Wide{k_max_duration} * divisor;
  if (number.mantissa > limit / unit) {
    return -1;
  }
  Wide nanos = (number.mantissa * unit + divisor - 1) / divisor;
  return nanos > k_max_duration ? -1 : static_cast<Nanos>(nanos);
}

std::string quoted(std::string_view text) {
  return fmt::format("\"{}\"", text);
}

} // namespace

Result<Nanos> parse_duration(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return Result<Nanos>::failure(
        fmt::format("invalid duration {}: {}; {}", quoted(text), why, k_duration_form));
  };
  std::string_view rest = text;
  if (!rest.empty() && rest.front() == '-') {
    return fail("it is negative");
  }
  Decimal number;
  if (!read_decimal(rest, number)) {
    return fail("not a number");
  }
  Nanos unit = k_nanos_per_second;
  if (!rest.empty()) {
    const Unit* found = find_unit(rest);
    if (found == nullptr) {
      return fail(fmt::format("unknown unit {}", quoted(rest)));
    }
    unit = found->length;
  }
  Nanos nanos = scale_to_nanos(number, unit);
  if (nanos < 0) {
    return fail("it is longer than 10 years");
  }
  return nanos;
}

Result<Rate> parse_rate(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return Result<Rate>::failure(
        fmt::format("invalid rate {}: {}; {}", quoted(text), why, k_rate_form));
  };
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return fail("no \"/\"");
  }
  std::string_view count_text = text.substr(0, slash);
  std::string_view period_text = text.substr(slash + 1);
  if (!count_text.empty() && count_text.front() == '-') {
    return fail("the count is negative");
  }
  Rate rate;
  auto [end, error] =
      std::from_chars(count_text.data(), count_text.data() + count_text.size(), rate.count);
  if (count_text.empty() || end != count_text.data() + count_text.size()) {
    return fail("the count is not a whole number");
  }
  if (error == std::errc::result_out_of_range || rate.count > k_max_count) {
    return fail(fmt::format("the count is above {}", k_max_count));
  }
  if (rate.count == 0) {
    return fail("the count is zero");
  }
  if (!period_text.empty() && period_text.front() == '-') {
    return fail("the period is negative");
  }
  Decimal multiple{1, 0};
  std::string_view unit_text = period_text;
  if (!unit_text.empty() && (is_digit(unit_text.front()) || unit_text.front() == '.')) {
    multiple = Decimal{};
    if (!read_decimal(unit_text, multiple)) {
      return fail("the period is not a number and a unit");
    }
  }
  if (unit_text.empty()) {
    return fail("the period has no unit (ms, s, m, h, d)");
  }
  const Unit* unit = find_unit(unit_text);
  if (unit == nullptr) {
    return fail(fmt::format("unknown unit {}", quoted(unit_text)));
  }
  rate.period = scale_to_nanos(multiple, unit->length);
  if (rate.period < 0) {
    return fail("the period is longer than 10 years");
  }
  if (rate.period == 0) {
    return fail("the period is zero");
  }
  if (rate.count > rate.period) {
    return fail("more than one request per nanosecond");
  }
  return rate;
}

std::string format_rate(const Rate& rate) {
  // In the largest unit that divides the period: 1/2h, not 1/7200s.
  for (std::string_view name : {"d", "h", "min", "s", "ms"}) {
    Nanos length = find_unit(name)->length;
    if (rate.period == length) {
      return fmt::format("{}/{}", rate.count, name);
    }
    if (rate.period % length == 0) {
      return fmt::format("{}/{}{}", rate.count, rate.period / length, name);
    }
  }
  // Not a whole millisecond: the exact seconds, down to the nanosecond (format_seconds
  // would round).
  std::string seconds =
      fmt::format("{}.{:09}", rate.period / k_nanos_per_second, rate.period % k_nanos_per_second);
  while (seconds.back() == '0') {
    seconds.pop_back();
  }
  return fmt::format("{}/{}s", rate.count, seconds);
}

std::string format_seconds(Nanos duration) {
  // Rounded up to the millisecond, like every duration shown to a user.
  std::int64_t ms = ceil_millis(duration);
  if (ms % 1000 == 0) {
    return fmt::format("{}s", ms / 1000);
  }
  std::string text = fmt::format("{}.{:03}", ms / 1000, ms % 1000);
  while (text.back() == '0') {
    text.pop_back();
  }
  return text + "s";
}

std::string format_duration(Nanos duration) {
  if (duration <= 60 * k_nanos_per_second) {
    return format_seconds(duration);
  }
  std::int64_t seconds = ceil_div(duration, k_nanos_per_second);
  if (seconds < 3600) {
    return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  }
  return fmt::format("{}h{:02}m{:02}s", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

} // namespace ratelimit::core
