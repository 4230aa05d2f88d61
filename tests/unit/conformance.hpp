#pragma once
// What the conformance tests of the stores share: reproducible random arrivals on one key,
// the limit sets they name, and the comparison of a store's decisions with the core's.
#include "core/decide.hpp"
#include "core/key_life.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ratelimit::conformance {

constexpr core::Nanos k_no_limit = std::numeric_limits<core::Nanos>::max();

struct Arrival {
  core::Nanos advance = 0; // after the previous arrival; negative: the clock stepped back
  std::int64_t cost = 1;
  bool reserve = false;
  core::Nanos max_wait = k_no_limit;
  int give_back = -1;        // before deciding, give back this earlier grant (an index)
  std::size_t limit_set = 0; // the limits the request names, an index into the key's sets
  // Before deciding, an answer observed on the key (`observe`): what it said (its resets in
  // the run's unit), and the earlier grant it answers (an index; -1: none named).
  bool observes = false;
  core::Observation observation{};
  int answers = -1;
  // The request awaits its answer (run --observe) for so long after its slot, in the run's
  // unit (0: it does not).
  core::Nanos answer_wait = 0;
};

// The request of `arrival` at `now`.
inline core::Request request_of(const Arrival& arrival, core::Nanos now) {
  core::Request request{now, arrival.cost, arrival.reserve, arrival.max_wait};
  request.answer_wait = arrival.answer_wait;
  return request;
}

// The observation of `arrival`, its grant named by the sequence of the grant it answers,
// from `grants` (the grants so far, in order).
inline core::Observation observation_of(const Arrival& arrival,
                                        const std::vector<core::Grant>& grants) {
  core::Observation observation = arrival.observation;
  if (arrival.answers >= 0 && arrival.answers < static_cast<int>(grants.size())) {
    observation.grant = grants[static_cast<std::size_t>(arrival.answers)].seq;
  }
  return observation;
}

inline core::Limit limit(std::int64_t count, core::Nanos period, std::int64_t burst = 0) {
  return {{count, period}, burst ? burst : count};
}

// Compares a store's decisions with the core's, reporting the first difference at `m_where`.
struct Comparison {
  std::string m_where;
  const char* m_side = "store";
  // Whether the store keeps what servers said (the grant sequence, the server budget): the
  // Redis script keeps a key's pause only.
  bool m_server_word = true;

  bool same(std::int64_t expected, std::int64_t actual, const char* what) {
    if (expected == actual) {
      return true;
    }
    FAIL_CHECK(m_where << ": " << std::string(what) << ": core " << expected << ", "
                       << std::string(m_side) << " " << actual);
    return false;
  }

  bool same_budget(const std::optional<core::BudgetStanding>& expected,
                   const std::optional<core::BudgetStanding>& actual) {
    return same(expected.has_value(), actual.has_value(), "budget") &&
           (!expected || (same(expected->remaining, actual->remaining, "budget remaining") &&
                          same(expected->reset, actual->reset, "budget reset")));
  }

  bool same_decision(const core::Decision& expected, const core::Decision& actual) {
    bool ok =
        same(expected.allowed, actual.allowed, "allowed") &&
        same(expected.now, actual.now, "now") && same(expected.wait, actual.wait, "wait") &&
        same(static_cast<std::int64_t>(expected.binding), static_cast<std::int64_t>(actual.binding),
             "binding") &&
        same(expected.remaining, actual.remaining, "remaining") &&
        same(expected.reset_after, actual.reset_after, "reset_after") &&
        same(expected.grant.at, actual.grant.at, "grant at") &&
        same(expected.grant.cost, actual.grant.cost, "grant cost") &&
        (!m_server_word || (same(expected.grant.seq, actual.grant.seq, "grant seq") &&
                            same(expected.budget_until, actual.budget_until, "budget until") &&
                            same_budget(expected.budget, actual.budget))) &&
        same(static_cast<std::int64_t>(expected.grant.markers.size()),
             static_cast<std::int64_t>(actual.grant.markers.size()), "markers");
    for (std::size_t i = 0; ok && i < expected.limits.size(); ++i) {
      ok =
          same(expected.limits[i].remaining, actual.limits[i].remaining, "limit remaining") &&
          same(expected.limits[i].reset_after, actual.limits[i].reset_after, "limit reset_after") &&
          same(expected.limits[i].retry_after, actual.limits[i].retry_after, "limit retry_after");
    }
    for (std::size_t i = 0; ok && i < expected.grant.markers.size(); ++i) {
      ok = same(expected.grant.markers[i], actual.grant.markers[i], "marker");
    }
    return ok;
  }
};

// A reproducible table of arrivals for `limits`: bursts, pauses, steps back, waits with and
// without a timeout, grants given back, and requests naming another of `limit_sets` of
// `limit_sets` sets (the first is `limits`).
inline std::vector<Arrival> random_arrivals(std::uint64_t seed, core::Algorithm algorithm,
                                            const std::vector<core::Limit>& limits,
                                            std::size_t limit_sets, int count) {
  std::mt19937_64 random(seed);
  auto uniform = [&](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  std::int64_t capacity = std::numeric_limits<std::int64_t>::max();
  core::Nanos period = 0;
  for (const core::Limit& l : limits) {
    capacity = std::min(capacity, l.max_cost(algorithm));
    period = std::max(period, l.rate.period);
  }
  core::Nanos interval = limits.front().rate.emission_interval();
  std::vector<Arrival> arrivals;
  int grants_so_far = 0;
  for (int i = 0; i < count; ++i) {
    Arrival arrival;
    std::int64_t kind = uniform(0, 99);
    if (kind < 30) {
      arrival.advance = 0;
    } else if (kind < 65) {
      arrival.advance = uniform(0, 2 * interval);
    } else if (kind < 90) {
      arrival.advance = uniform(0, period);
    } else if (kind < 96) {
      arrival.advance = uniform(period, 3 * period);
    } else {
      arrival.advance = -uniform(0, period / 2);
    }
    arrival.cost = uniform(0, 9) < 6 ? 1 : uniform(1, capacity);
    arrival.reserve = uniform(0, 9) < 4;
    if (arrival.reserve && uniform(0, 1) == 0) {
      arrival.max_wait = uniform(0, 2 * period);
    }
    if (grants_so_far > 0 && uniform(0, 9) == 0) {
      arrival.give_back = static_cast<int>(uniform(0, grants_so_far - 1));
    }
    if (limit_sets > 1 && uniform(0, 9) < 3) {
      arrival.limit_set = static_cast<std::size_t>(uniform(1, limit_sets - 1));
    }
    ++grants_so_far; // an upper bound: indices past the real grants are ignored
    arrivals.push_back(arrival);
  }
  return arrivals;
}

struct Configuration {
  const char* name;
  std::vector<core::Limit> limits;
  core::Nanos start;
};

// `second` is the unit of time: microseconds for the Redis script, nanoseconds for SQLite.
inline std::vector<Configuration> configurations(core::Algorithm algorithm, core::Nanos second) {
  const core::Nanos k_second = second;
  bool bucket = core::takes_burst(algorithm);
  core::Nanos t0 = 1'700'000'000 * second + 123'457 * (second / 1'000'000);
  return {
      {"10/s", {limit(10, k_second)}, t0},
      {"3/s burst 5", {limit(3, k_second, bucket ? 5 : 0)}, t0},
      {"7/3s burst 1", {limit(7, 3 * k_second, bucket ? 1 : 0)}, t0},
      {"5/s and 20/10s", {limit(5, k_second), limit(20, 10 * k_second)}, t0},
      {"2/100ms, 10/s, 50/min",
       {limit(2, k_second / 10), limit(10, k_second), limit(50, 60 * k_second)},
       t0},
      {"1e8/day", {limit(100'000'000, 86'400 * k_second)}, t0},
      // Months before the latest time counted (core::k_max_time, 2^62 ns: the year 2116),
      // where doubles hold integers of 52 bits.
      {"1e8/day late", {limit(100'000'000, 86'400 * k_second)}, 4'600'000'000 * second},
  };
}

// `limits`, then each of its limits dropped in turn, the first with a larger count (and
// burst), with a longer period, and with a smaller burst: what a key meets when callers name
// different limits.
inline std::vector<std::vector<core::Limit>> limit_sets(const std::vector<core::Limit>& limits) {
  std::vector<std::vector<core::Limit>> sets{limits};
  if (limits.size() >= 2) {
    for (std::size_t dropped = 0; dropped < limits.size(); ++dropped) {
      std::vector<core::Limit> set;
      for (std::size_t i = 0; i < limits.size(); ++i) {
        if (i != dropped) {
          set.push_back(limits[i]);
        }
      }
      sets.push_back(set);
    }
  }
  std::vector<core::Limit> changed = limits;
  changed.front().rate.count *= 2;
  changed.front().burst *= 2;
  sets.push_back(changed);
  std::vector<core::Limit> other_period = limits;
  other_period.front().rate.period = other_period.front().rate.period * 3 / 2 + 7;
  sets.push_back(other_period);
  std::vector<core::Limit> smaller_burst = limits;
  smaller_burst.front().burst = std::max<std::int64_t>(1, smaller_burst.front().burst / 2);
  sets.push_back(smaller_burst);
  return sets;
}

// A key as a store keeps it, in memory: its stored state (none: no key) and its log, living
// the life that core/key_life.hpp gives it.
struct MemoryKey {
  std::optional<core::KeyState> stored;
  core::MemoryGrantLog log;

  // Decides `call` and writes what it leaves to write.
  core::KeyOutcome decide(const core::KeyCall& call) {
    return written(core::decide_key(stored, call, log));
  }

  // Gives back `grant`, decided under `algorithm` and `limits`.
  void give_back(core::Algorithm algorithm, std::span<const core::Limit> limits,
                 const core::Grant& grant, core::Nanos now) {
    written(core::give_back_to_key(stored, algorithm, limits, grant, now, log));
  }

  // Pauses the key for `duration` from `now`.
  core::KeyOutcome pause(core::Nanos now, core::Nanos duration) {
    return written(core::pause_key(stored, now, duration, log));
  }

  // Applies what a server answered at `now`.
  core::KeyOutcome observe(core::Nanos now, const core::Observation& observation) {
    return written(core::observe_key(stored, now, observation, log));
  }

  // Whether the key, if stored, holds nothing at `now`: gc may collect it.
  bool fresh(core::Nanos now) { return !stored || core::is_fresh(*stored, log, now); }

private:
  core::KeyOutcome written(core::KeyOutcome outcome) {
    if (outcome.write == core::KeyWrite::state) {
      stored = outcome.state;
    } else if (outcome.write == core::KeyWrite::erase) {
      stored.reset();
      log = core::MemoryGrantLog{};
    }
    return outcome;
  }
};

// One run of the conformance harnesses: a key of `algorithm` under `configuration`, the
// limit sets its callers name, and the arrivals. Both stores' harnesses replay the same runs
// (in their own unit of time), and test_core_conformance_vectors.cpp pins the core's
// decisions on them to the checked-in vectors.
struct Run {
  core::Algorithm algorithm;
  Configuration configuration;
  std::vector<std::vector<core::Limit>> limit_sets;
  std::vector<Arrival> arrivals;
  // The arrivals observe answers: the vectors count the server's word too.
  bool server_word = false;
};

// Every run, with `second` the unit of time; the arrivals are the same in every unit.
inline std::vector<Run> runs(core::Nanos second) {
  std::vector<Run> result;
  std::uint64_t seed = 1;
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    // Drawn with the limits of the unit of microseconds, so that both units replay the same
    // arrivals, scaled.
    auto in_micros = configurations(algorithm, 1'000'000);
    auto in_unit = configurations(algorithm, second);
    for (std::size_t i = 0; i < in_unit.size(); ++i) {
      auto sets = limit_sets(in_unit[i].limits);
      auto arrivals = random_arrivals(seed++, algorithm, in_micros[i].limits, sets.size(), 250);
      for (Arrival& arrival : arrivals) {
        arrival.advance = arrival.advance * (second / 1'000'000);
        if (arrival.max_wait != k_no_limit) {
          arrival.max_wait = arrival.max_wait * (second / 1'000'000);
        }
      }
      result.push_back({algorithm, in_unit[i], std::move(sets), std::move(arrivals)});
    }
  }
  return result;
}

// The core alone on `run`, as the harnesses mirror it: a key in memory; a grant given back
// goes back to the key.
// The runs whose arrivals also observe answers (core::observe): each of the stores' first
// limits on every algorithm, answers saying how many are left until a reset within a few
// periods, some naming the grant they answer, some requests awaiting their answers for a
// while, in short steps.
inline std::vector<Run> budget_runs(core::Nanos second) {
  std::vector<Run> result;
  std::uint64_t seed = 1000;
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    auto in_micros = configurations(algorithm, 1'000'000);
    auto in_unit = configurations(algorithm, second);
    for (std::size_t i : {std::size_t{0}, std::size_t{3}}) {
      auto sets = limit_sets(in_unit[i].limits);
      std::vector<Arrival> arrivals =
          random_arrivals(seed, algorithm, in_micros[i].limits, sets.size(), 250);
      std::mt19937_64 random(seed++);
      auto uniform = [&](std::int64_t low, std::int64_t high) {
        return std::uniform_int_distribution<std::int64_t>(low, high)(random);
      };
      core::Nanos interval = in_micros[i].limits.front().rate.emission_interval();
      core::Nanos elapsed = 0;
      for (std::size_t n = 0; n < arrivals.size(); ++n) {
        Arrival& arrival = arrivals[n];
        // Short steps (the clock stepping back still), within 50 s in all.
        arrival.advance = std::clamp<core::Nanos>(arrival.advance, -interval, 2 * interval);
        if (elapsed + arrival.advance > 50'000'000) {
          arrival.advance = 0;
        }
        elapsed += arrival.advance;
        // Some end within the run.
        arrival.answer_wait = uniform(0, 1) == 0 ? 0 : uniform(1, 40) * interval;
        if (uniform(0, 3) == 0) {
          arrival.observes = true;
          arrival.answers = uniform(0, 2) == 0 ? -1 : static_cast<int>(uniform(0, n));
          arrival.observation.throttled = uniform(0, 4) == 0;
          arrival.observation.pause = uniform(0, 9) == 0 ? uniform(1, 2 * interval) : 0;
          for (std::int64_t k = uniform(0, 2); k > 0; --k) {
            arrival.observation.standings.push_back(
                {uniform(0, 12), uniform(-interval, 30 * interval)});
          }
        }
        for (core::SaidStanding& standing : arrival.observation.standings) {
          standing.reset_after *= second / 1'000'000;
        }
        arrival.observation.pause *= second / 1'000'000;
        arrival.answer_wait *= second / 1'000'000;
        arrival.advance *= second / 1'000'000;
        if (arrival.max_wait != k_no_limit) {
          arrival.max_wait *= second / 1'000'000;
        }
      }
      result.push_back({algorithm, in_unit[i], std::move(sets), std::move(arrivals), true});
    }
  }
  return result;
}

// The core alone on `run`, as the harnesses mirror it: a decision is kept when granted or
// when it changed a stored key's limits (or one holding what a server said); a grant given
// back goes back to the key; an answer observed applies to it.
inline std::vector<core::Decision> core_decisions(const Run& run) {
  MemoryKey key;
  struct Granted {
    core::Grant grant;
    std::size_t limit_set;
    bool given_back;
  };
  std::vector<Granted> grants;
  std::vector<core::Grant> granted_so_far;
  std::vector<core::Decision> decisions;
  core::Nanos now = run.configuration.start;
  for (const Arrival& arrival : run.arrivals) {
    now += arrival.advance;
    if (arrival.observes) {
      key.observe(now, observation_of(arrival, granted_so_far));
    }
    if (arrival.give_back >= 0 && arrival.give_back < static_cast<int>(grants.size()) &&
        !grants[arrival.give_back].given_back) {
      Granted& granted = grants[arrival.give_back];
      granted.given_back = true;
      key.give_back(run.algorithm, run.limit_sets[granted.limit_set], granted.grant, now);
    }
    const std::vector<core::Limit>& limits = run.limit_sets.at(arrival.limit_set);
    core::Decision decision =
        key.decide({run.algorithm, true, limits, request_of(arrival, now)}).decision;
    if (decision.allowed) {
      grants.push_back({decision.grant, arrival.limit_set, false});
      granted_so_far.push_back(decision.grant);
    }
    decisions.push_back(std::move(decision));
  }
  return decisions;
}

// One line of the checked-in vectors: a run's grants, denials and a digest (FNV-1a) of every
// figure of every decision, in the unit of the run.
inline std::string vector_line(const char* unit, const Run& run,
                               const std::vector<core::Decision>& decisions) {
  std::uint64_t hash = 14695981039346656037ULL;
  auto mix = [&](std::int64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= static_cast<std::uint64_t>(value >> (8 * i)) & 0xff;
      hash *= 1099511628211ULL;
    }
  };
  int allowed = 0;
  for (const core::Decision& decision : decisions) {
    allowed += decision.allowed;
    for (std::int64_t value :
         {std::int64_t{decision.allowed}, decision.now, decision.wait,
          static_cast<std::int64_t>(decision.binding), decision.remaining, decision.reset_after,
          decision.grant.at, decision.grant.cost, static_cast<std::int64_t>(decision.refusal)}) {
      mix(value);
    }
    for (const core::LimitReport& limit : decision.limits) {
      mix(limit.remaining);
      mix(limit.reset_after);
      mix(limit.retry_after);
    }
    for (std::int64_t marker : decision.grant.markers) {
      mix(marker);
    }
    if (run.server_word) {
      for (std::int64_t value : {decision.grant.seq, decision.budget_until,
                                 decision.budget ? decision.budget->remaining : -1,
                                 decision.budget ? decision.budget->reset : 0}) {
        mix(value);
      }
    }
  }
  return fmt::format("{} {} \"{}\" granted {} denied {} digest {:016x}", unit,
                     core::algorithm_name(run.algorithm), run.configuration.name, allowed,
                     decisions.size() - allowed, hash);
}

} // namespace ratelimit::conformance
