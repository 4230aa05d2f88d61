#pragma once
// The differential check of the stores against the core (test_store_differential.cpp): random
// scenarios on one key, drawn from a seed, and the decisions told in words. A scenario's calls
// name limits from a pool of limit sets, under the key's algorithm, another (a conflict, or
// a fresh key taken over) or the default; they wait or try at instants that hit window
// boundaries exactly, step the clock back, pause the key, give grants back and look at its
// status.
//
// Seeds and length come from the environment, so that a long run can go on for minutes:
//   RATELIMIT_DIFFERENTIAL_SEED     the first seed (default 1); runs take the next ones
//   RATELIMIT_DIFFERENTIAL_SECONDS  how long each check runs, at least one scenario (default 1.5)
//   RATELIMIT_DIFFERENTIAL_LENGTH   steps per scenario (default 300)
#include "core/algorithm.hpp"
#include "core/decide.hpp"
#include "core/rate.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

namespace ratelimit::differential {

struct Settings {
  std::uint64_t first_seed = 1;
  double seconds = 1.5;
  int length = 300;

  static Settings from_environment() {
    Settings settings;
    if (const char* seed = std::getenv("RATELIMIT_DIFFERENTIAL_SEED")) {
      settings.first_seed = std::strtoull(seed, nullptr, 10);
    }
    if (const char* seconds = std::getenv("RATELIMIT_DIFFERENTIAL_SECONDS")) {
      settings.seconds = std::strtod(seconds, nullptr);
    }
    if (const char* length = std::getenv("RATELIMIT_DIFFERENTIAL_LENGTH")) {
      settings.length = std::max(1, std::atoi(length));
    }
    return settings;
  }
};

// Runs `run(seed)` for consecutive seeds from the first until the settings' time is spent
// (once at least) or a run returns false; returns the seeds run.
template <typename Run>
std::uint64_t for_each_seed(const Settings& settings, Run&& run) {
  auto start = std::chrono::steady_clock::now();
  std::uint64_t runs = 0;
  do {
    if (!run(settings.first_seed + runs++)) {
      break;
    }
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
           settings.seconds);
  return runs;
}

enum class Op { decide, give_back, pause, status, collect };

// Rates with the bursts a bucket call gives them; other calls give none (a burst of N).
struct LimitSet {
  std::vector<core::Rate> rates;
  std::vector<std::int64_t> bursts;
};

struct Step {
  Op op = Op::decide;
  // Before the step; negative: the clock stepped back.
  core::Nanos advance = 0;
  // decide: the call.
  core::Algorithm algorithm = core::Algorithm::sliding_log;
  bool chosen = true;
  std::size_t limit_set = 0;
  core::Request request;
  // give_back: which of the grants so far, modulo their number.
  std::size_t grant = 0;
  // pause: its length.
  core::Nanos duration = 0;
};

struct Scenario {
  std::uint64_t seed = 0;
  core::Algorithm algorithm = core::Algorithm::sliding_log;
  core::Nanos start = 0;
  std::vector<LimitSet> limit_sets;
  std::vector<Step> steps;

  // The limits a call of `algorithm` names from limit set `index`: bucket calls that choose
  // give their bursts, other calls none (a burst of N).
  std::vector<core::Limit> limits(std::size_t index, core::Algorithm call, bool chosen) const {
    const LimitSet& set = limit_sets.at(index);
    std::vector<core::Limit> result;
    for (std::size_t i = 0; i < set.rates.size(); ++i) {
      bool burst = chosen && core::takes_burst(call);
      result.push_back({set.rates[i], burst ? set.bursts[i] : set.rates[i].count});
    }
    return result;
  }
};

// The most cost `limits` let a call of `algorithm` take.
inline std::int64_t max_cost(core::Algorithm algorithm, const std::vector<core::Limit>& limits) {
  std::int64_t most = std::numeric_limits<std::int64_t>::max();
  for (const core::Limit& limit : limits) {
    most = std::min(most, limit.max_cost(algorithm));
  }
  return most;
}

// The scenario of `seed`, `length` steps long.
inline Scenario scenario(std::uint64_t seed, int length) {
  std::mt19937_64 random(seed);
  auto uniform = [&](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  auto percent = [&] { return uniform(0, 99); };
  constexpr core::Nanos k_s = core::k_nanos_per_second;
  constexpr core::Nanos k_ms = core::k_nanos_per_milli;

  Scenario s;
  s.seed = seed;
  s.algorithm = core::k_all_algorithms[uniform(0, std::size(core::k_all_algorithms) - 1)];
  // The unit of the periods: from milliseconds to days.
  const core::Nanos units[] = {k_ms, 10 * k_ms, 100 * k_ms, k_s, 60 * k_s, 3600 * k_s, 86400 * k_s};
  core::Nanos unit = units[uniform(0, std::size(units) - 1)];
  // A pool of rates, each with its own period, some of them not whole microseconds (the
  // Redis store rounds them up).
  std::vector<core::Rate> pool;
  const std::int64_t factors[] = {1, 2, 3, 5, 7, 10, 12, 30, 60};
  for (int i = 0; pool.size() < 24 && i < 1000; ++i) {
    core::Nanos period =
        unit * factors[uniform(0, std::size(factors) - 1)] + uniform(-3, 3) * unit / 8;
    if (percent() < 15) {
      period += uniform(1, 999); // not a whole microsecond
    }
    std::int64_t count = percent() < 85 ? uniform(1, 12) : uniform(13, 100'000);
    period = std::max<core::Nanos>(period, count * core::k_nanos_per_micro * 2);
    bool taken = false;
    for (const core::Rate& rate : pool) {
      taken = taken || rate.period == period;
    }
    if (!taken && period <= core::k_max_duration) {
      pool.push_back({count, period});
    }
  }
  auto make_set = [&](std::size_t size, std::size_t first) {
    LimitSet set;
    for (std::size_t i = 0; i < size; ++i) {
      core::Rate rate = pool[(first + i * 7) % pool.size()];
      set.rates.push_back(rate);
      set.bursts.push_back(percent() < 50 ? rate.count : uniform(1, 2 * rate.count + 3));
    }
    return set;
  };
  // The key's usual set first; then the sets other calls name: one per rate of the pool,
  // so that a bucket meets more limits than it remembers (k_max_remembered), and some of
  // two or three.
  s.limit_sets.push_back(make_set(static_cast<std::size_t>(uniform(1, 3)), 0));
  for (std::size_t i = 0; i < pool.size(); ++i) {
    s.limit_sets.push_back(make_set(1, i));
  }
  for (int i = 0; i < 6; ++i) {
    s.limit_sets.push_back(make_set(static_cast<std::size_t>(uniform(2, 3)),
                                    static_cast<std::size_t>(uniform(0, 23))));
  }
  bool many_limits = percent() < 35; // most calls name another set

  // Mostly now; sometimes aligned to a day, so that windows start at round times; sometimes
  // late in the range the stores count, near 2100.
  s.start = 1'700'000'000 * k_s + uniform(0, 86'400) * k_s + uniform(0, k_s - 1);
  if (percent() < 30) {
    s.start = (s.start / (86'400 * k_s)) * 86'400 * k_s;
  } else if (percent() < 10) {
    s.start = 4'100'000'000 * k_s + uniform(0, k_s - 1);
  }

  core::Nanos now = s.start;
  for (int i = 0; i < length; ++i) {
    Step step;
    int op = static_cast<int>(percent());
    step.op = op < 80   ? Op::decide
              : op < 86 ? Op::give_back
              : op < 91 ? Op::pause
              : op < 97 ? Op::status
                        : Op::collect;
    // The set this step is about, for its times.
    step.limit_set = many_limits && percent() < 70
                         ? static_cast<std::size_t>(uniform(1, s.limit_sets.size() - 1))
                     : percent() < 75
                         ? 0
                         : static_cast<std::size_t>(uniform(1, s.limit_sets.size() - 1));
    const LimitSet& set = s.limit_sets[step.limit_set];
    core::Nanos period =
        set.rates[static_cast<std::size_t>(uniform(0, set.rates.size() - 1))].period;
    core::Nanos interval = std::max<core::Nanos>(1, period / set.rates.front().count);
    int kind = static_cast<int>(percent());
    if (kind < 25) {
      step.advance = 0;
    } else if (kind < 48) {
      step.advance = uniform(0, 2 * interval);
    } else if (kind < 62) {
      step.advance = uniform(0, period);
    } else if (kind < 80) {
      // A window boundary of the period, exactly or a nanosecond or a microsecond off.
      const core::Nanos offsets[] = {0, 0, 0, -1, 1, -1000, 1000, -999};
      core::Nanos boundary = core::floor_div(now, period) * period + period;
      step.advance = boundary + offsets[uniform(0, std::size(offsets) - 1)] - now;
    } else if (kind < 88) {
      step.advance = uniform(period, 3 * period);
    } else if (kind < 92) {
      step.advance = uniform(30, 100) * unit * 60; // longer than any period: a fresh key
    } else {
      step.advance = -uniform(0, percent() < 80 ? period / 2 : 30 * unit);
    }
    // Far jumps stop short of the latest time the stores count (2116).
    if (now + step.advance > 4'500'000'000 * k_s) {
      step.advance = 0;
    }
    now += step.advance;
    if (step.op == Op::decide) {
      int who = static_cast<int>(percent());
      if (who < 75) {
        step.algorithm = s.algorithm;
      } else if (who < 87) {
        step.algorithm = core::k_all_algorithms[uniform(0, std::size(core::k_all_algorithms) - 1)];
      } else {
        step.algorithm = core::default_algorithm(false);
        step.chosen = false;
      }
      std::vector<core::Limit> limits = s.limits(step.limit_set, step.algorithm, step.chosen);
      std::int64_t most = max_cost(step.algorithm, limits);
      step.request.cost = percent() < 70 ? 1 : uniform(1, std::min<std::int64_t>(most, 40));
      step.request.reserve = percent() < 40;
      if (step.request.reserve && percent() < 50) {
        step.request.max_wait = uniform(0, 2 * period);
      }
    } else if (step.op == Op::give_back) {
      step.grant = static_cast<std::size_t>(uniform(0, 1 << 30));
    } else if (step.op == Op::pause) {
      int length_kind = static_cast<int>(percent());
      step.duration = length_kind < 10   ? 0
                      : length_kind < 70 ? uniform(1, period)
                                         : uniform(period, 10 * period);
    }
    s.steps.push_back(step);
  }
  return s;
}

inline constexpr core::Nanos k_micro = core::k_nanos_per_micro;

// A decision of the core in microseconds, in nanoseconds: the times and durations the Redis
// store converts (see redis_store.cpp; written again here, so as to check it). The markers
// stay as they are.
inline core::Decision in_nanos(core::Decision d) {
  for (core::Nanos* t : {&d.now, &d.wait, &d.reset_after, &d.paused_until, &d.grant.at}) {
    *t *= k_micro;
  }
  for (core::LimitReport& limit : d.limits) {
    limit.reset_after *= k_micro;
    limit.retry_after *= k_micro;
  }
  return d;
}

// `time` as seconds after `t0`, to the nanosecond.
inline std::string after(core::Nanos time, core::Nanos t0) {
  core::Nanos d = time - t0;
  return fmt::format("t0{}{}.{:09}s", d < 0 ? "-" : "+", std::abs(d) / core::k_nanos_per_second,
                     std::abs(d) % core::k_nanos_per_second);
}

inline std::string seconds(core::Nanos d) {
  return fmt::format("{}{}.{:09}s", d < 0 ? "-" : "", std::abs(d) / core::k_nanos_per_second,
                     std::abs(d) % core::k_nanos_per_second);
}

inline std::string limits_in_words(const std::vector<core::Limit>& limits) {
  std::string text;
  for (const core::Limit& limit : limits) {
    text += fmt::format("{}{}/{} burst {}", text.empty() ? "" : ", ", limit.rate.count,
                        seconds(limit.rate.period), limit.burst);
  }
  return text;
}

// The call of `step`, in words.
inline std::string call_in_words(const Step& step, const std::vector<core::Limit>& limits) {
  std::string kind = step.request.reserve ? "wait" : "try";
  if (step.request.reserve && step.request.max_wait != std::numeric_limits<core::Nanos>::max()) {
    kind += " (at most " + seconds(step.request.max_wait) + ")";
  }
  return fmt::format("{} of cost {} on {}, {} {}", kind, step.request.cost, limits_in_words(limits),
                     core::algorithm_name(step.algorithm), step.chosen ? "chosen" : "by default");
}

inline const char* refusal_name(core::Refusal refusal) {
  switch (refusal) {
  case core::Refusal::none:
    return "none";
  case core::Refusal::later:
    return "later";
  case core::Refusal::timeout:
    return "timeout";
  case core::Refusal::full:
    return "full";
  case core::Refusal::too_far:
    return "too far";
  }
  return "?";
}

// A decision, in words.
inline std::string decision_in_words(const core::Decision& d, core::Nanos t0) {
  std::string text =
      d.allowed ? fmt::format("granted at {} (wait {})", after(d.grant.at, t0), seconds(d.wait))
                : fmt::format("denied ({}), wait {}", refusal_name(d.refusal), seconds(d.wait));
  text += fmt::format(" by {}, now {}, binding {}, remaining {}, reset after {}",
                      core::algorithm_name(d.algorithm), after(d.now, t0), d.binding, d.remaining,
                      seconds(d.reset_after));
  if (d.paused_until != 0) {
    text += ", paused until " + after(d.paused_until, t0);
  }
  for (std::size_t i = 0; i < d.limits.size(); ++i) {
    text += fmt::format("; limit {}: remaining {}, reset after {}, retry after {}", i,
                        d.limits[i].remaining, seconds(d.limits[i].reset_after),
                        seconds(d.limits[i].retry_after));
  }
  if (d.allowed) {
    text += fmt::format("; markers {}", fmt::join(d.grant.markers, " "));
  }
  return text;
}

// The first figure in which two decisions differ, in words; empty when they agree.
inline std::string first_difference(const core::Decision& a, const core::Decision& b) {
  auto field = [](const char* name, std::int64_t x, std::int64_t y) {
    return x == y ? std::string() : fmt::format("{}: {} against {}", name, x, y);
  };
  std::vector<std::string> differences = {
      field("allowed", a.allowed, b.allowed),
      field("algorithm", static_cast<int>(a.algorithm), static_cast<int>(b.algorithm)),
      field("refusal", static_cast<int>(a.refusal), static_cast<int>(b.refusal)),
      field("now", a.now, b.now),
      field("wait", a.wait, b.wait),
      field("binding", static_cast<std::int64_t>(a.binding), static_cast<std::int64_t>(b.binding)),
      field("remaining", a.remaining, b.remaining),
      field("reset_after", a.reset_after, b.reset_after),
      field("paused_until", a.paused_until, b.paused_until),
      field("grant at", a.grant.at, b.grant.at),
      field("grant cost", a.grant.cost, b.grant.cost),
      field("limits", static_cast<std::int64_t>(a.limits.size()),
            static_cast<std::int64_t>(b.limits.size())),
      field("markers", static_cast<std::int64_t>(a.grant.markers.size()),
            static_cast<std::int64_t>(b.grant.markers.size()))};
  for (const std::string& difference : differences) {
    if (!difference.empty()) {
      return difference;
    }
  }
  for (std::size_t i = 0; i < a.limits.size(); ++i) {
    for (const std::string& difference :
         {field("limit remaining", a.limits[i].remaining, b.limits[i].remaining),
          field("limit reset_after", a.limits[i].reset_after, b.limits[i].reset_after),
          field("limit retry_after", a.limits[i].retry_after, b.limits[i].retry_after)}) {
      if (!difference.empty()) {
        return fmt::format("limit {}: {}", i, difference);
      }
    }
  }
  for (std::size_t i = 0; i < a.grant.markers.size(); ++i) {
    if (a.grant.markers[i] != b.grant.markers[i]) {
      return fmt::format("marker {}: {} against {}", i, a.grant.markers[i], b.grant.markers[i]);
    }
  }
  return {};
}

} // namespace ratelimit::differential
