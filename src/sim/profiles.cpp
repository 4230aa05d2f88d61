#include "sim/profiles.hpp"

#include "sim/random.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace ratelimit::sim {

namespace {

using core::Nanos;
using core::Wide;

constexpr std::string_view k_profile_form = "expected steady, burst, boundary or poisson";

// `value * load`, rounded to the nearest whole number, at least 1.
std::int64_t scaled(std::int64_t value, const Load& load) {
  Wide product = Wide{value} * load.numerator;
  auto rounded =
      static_cast<std::int64_t>((2 * product + load.denominator) / (2 * load.denominator));
  return std::max<std::int64_t>(1, rounded);
}

// Collects arrivals up to the profile's end and the arrival cap.
class Arrivals {
public:
  explicit Arrivals(Nanos duration) : m_duration(duration) {}

  // Adds an arrival at `at`; false once `at` is past the end.
  bool add(Nanos at) {
    if (at >= m_duration) {
      return false;
    }
    if (static_cast<std::int64_t>(m_list.size()) >= k_max_profile_arrivals) {
      m_overflow = true;
      return false;
    }
    m_list.push_back({at, 1});
    return true;
  }

  bool overflow() const { return m_overflow; }
  std::vector<Arrival>& list() { return m_list; }

private:
  Nanos m_duration;
  bool m_overflow = false;
  std::vector<Arrival> m_list;
};

void steady(const ProfileSpec& spec, Arrivals& out) {
  // The i-th arrival at i * PERIOD / (load * N), computed from i so that no error accumulates.
  Wide step_numerator = Wide{spec.rate.period} * spec.load.denominator;
  Wide step_denominator = Wide{spec.rate.count} * spec.load.numerator;
  for (std::int64_t i = 0;; ++i) {
    if (!out.add(static_cast<Nanos>(i * step_numerator / step_denominator))) {
      return;
    }
  }
}

// `count` arrivals spread evenly over [start, start + span), the first at `start`.
bool spread(Arrivals& out, Nanos start, Nanos span, std::int64_t count) {
  for (std::int64_t j = 0; j < count; ++j) {
    if (!out.add(start + static_cast<Nanos>(Wide{j} * span / count))) {
      return false;
    }
  }
  return true;
}

void burst(const ProfileSpec& spec, Arrivals& out) {
  Nanos cycle = 2 * spec.rate.period;
  Nanos span = std::max<Nanos>(1, spec.rate.period / 10);
  std::int64_t size = scaled(2 * spec.rate.count, spec.load);
  for (Nanos start = cycle - span; spread(out, start, span, size); start += cycle) {
  }
}

void boundary(const ProfileSpec& spec, Arrivals& out) {
  Nanos period = spec.rate.period;
  Nanos span = std::max<Nanos>(1, period / 10);
  std::int64_t side = scaled(spec.rate.count, spec.load);
  // Boundaries at odd multiples of PERIOD leave a quiet PERIOD between the patterns.
  for (Nanos edge = period;; edge += 2 * period) {
    if (!spread(out, edge - span, span, side) || !spread(out, edge, span, side)) {
      return;
    }
  }
}

void poisson(const ProfileSpec& spec, Arrivals& out) {
  SplitMix64 random(spec.seed);
  double mean_gap =
      static_cast<double>(spec.rate.period) * static_cast<double>(spec.load.denominator) /
      (static_cast<double>(spec.rate.count) * static_cast<double>(spec.load.numerator));
  Nanos at = 0;
  for (;;) {
    // Inverse transform: -ln(1 - U) is exponential with mean 1.
    double gap = -std::log(1.0 - random.unit()) * mean_gap;
    at += static_cast<Nanos>(gap + 0.5);
    if (!out.add(at)) {
      return;
    }
  }
}

} // namespace

std::string_view profile_name(Profile profile) {
  switch (profile) {
  case Profile::steady:
    return "steady";
  case Profile::burst:
    return "burst";
  case Profile::boundary:
    return "boundary";
  case Profile::poisson:
    return "poisson";
  }
  return "?";
}

core::Result<Profile> parse_profile(std::string_view name) {
  for (Profile profile : {Profile::steady, Profile::burst, Profile::boundary, Profile::poisson}) {
    if (profile_name(profile) == name) {
      return profile;
    }
  }
  return core::Result<Profile>::failure(
      fmt::format("unknown profile \"{}\"; {}", name.substr(0, 64), k_profile_form));
}

core::Result<Load> parse_load(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return core::Result<Load>::failure(
        fmt::format("invalid load \"{}\": {}; expected a number above 0 and at most 1000 with at "
                    "most 6 decimals, e.g. 0.5, 1, 2.5",
                    text.substr(0, 64), why));
  };
  Load load{0, 1};
  bool any_digit = false;
  bool seen_point = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      any_digit = true;
      if (seen_point && load.denominator == 1'000'000) {
        return fail("too many decimals");
      }
      load.numerator = load.numerator * 10 + (c - '0');
      load.denominator *= seen_point ? 10 : 1;
      if (load.numerator > 1000 * load.denominator) {
        return fail("it is above 1000");
      }
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      return fail("not a number");
    }
  }
  if (!any_digit) {
    return fail("not a number");
  }
  if (load.numerator == 0) {
    return fail("it is zero");
  }
  return load;
}

core::Result<std::vector<Arrival>> generate(const ProfileSpec& spec) {
  using Failure = core::Result<std::vector<Arrival>>;
  auto too_many = [] {
    return Failure::failure(fmt::format("the profile would make more than {} arrivals; give a "
                                        "shorter --duration or a lower --load",
                                        k_max_profile_arrivals));
  };
  // Every profile averages load x N per PERIOD: refuse a huge one before building it.
  double expected = static_cast<double>(spec.duration) / static_cast<double>(spec.rate.period) *
                    static_cast<double>(spec.rate.count) *
                    static_cast<double>(spec.load.numerator) /
                    static_cast<double>(spec.load.denominator);
  if (expected > static_cast<double>(k_max_profile_arrivals)) {
    return too_many();
  }
  Arrivals out(spec.duration);
  switch (spec.profile) {
  case Profile::steady:
    steady(spec, out);
    break;
  case Profile::burst:
    burst(spec, out);
    break;
  case Profile::boundary:
    boundary(spec, out);
    break;
  case Profile::poisson:
    poisson(spec, out);
    break;
  }
  if (out.overflow()) {
    return too_many();
  }
  if (out.list().empty()) {
    return Failure::failure(fmt::format("the {} profile makes no arrival within --duration {}; "
                                        "give a longer one",
                                        profile_name(spec.profile),
                                        core::format_seconds(spec.duration)));
  }
  return std::move(out.list());
}

} // namespace ratelimit::sim
