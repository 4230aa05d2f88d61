// The Redis script's adaptive rate against the core's: the same law on the same integers,
// the script in microseconds, the core in nanoseconds (a microsecond each), as the Redis
// store runs them. The law counts in absolute time (a second, an hour), so unlike the other
// conformance runs the core is not run in the script's unit.
#include "conformance.hpp"
#include "core/adaptive_rate.hpp"
#include "redis_server.hpp"
#include "store/redis/redis_connection.hpp"
#include "store/redis/redis_script.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <random>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_micro = core::k_nanos_per_micro;

// `state` in microseconds, as the script keeps it, in nanoseconds.
core::AdaptiveState in_nanos(core::AdaptiveState state) {
  for (core::Nanos* time : {&state.cut_at, &state.measured_from, &state.clock, &state.next_slot}) {
    *time *= k_micro;
  }
  return state;
}

std::string describe(const std::optional<core::AdaptiveState>& state) {
  if (!state) {
    return "none";
  }
  return fmt::format("max_rate {} cut_at {} successes {} measured_from {} clock {} next_slot {}",
                     state->max_rate, state->cut_at, state->successes, state->measured_from,
                     state->clock, state->next_slot);
}

struct Totals {
  int given_back = 0;
  int granted = 0;
  int spaced = 0;
  int cuts = 0;
  int grouped = 0; // throttles within a round of the last cut
};

// One run of `seed`: adaptive calls and answers on one key, compared step by step.
bool compare_run(store::redis::RedisScript& script, std::uint64_t seed, Totals& totals) {
  std::mt19937_64 random(seed);
  auto uniform = [&](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  const std::int64_t counts[] = {1, 5, 10, 50, 1000};
  const core::Nanos periods[] = {1'000'000, 2'000'000, 60'000'000}; // microseconds
  core::Algorithm algorithm =
      core::k_all_algorithms[uniform(0, std::size(core::k_all_algorithms) - 1)];
  std::int64_t count = counts[uniform(0, std::size(counts) - 1)];
  core::Nanos period = periods[uniform(0, std::size(periods) - 1)];
  std::vector<core::Limit> micros{{{count, period}, count}};
  std::vector<core::Limit> nanos{{{count, period * k_micro}, count}};
  core::Nanos interval = period / count;
  std::string key = fmt::format("adaptive {}", seed);
  script.reset(key);
  conformance::MemoryKey core_key;
  // The grants so far, as the core and the script made them, and whether given back.
  struct Granted {
    core::Grant core;
    core::Grant script;
    bool given_back = false;
  };
  std::vector<Granted> grants;
  core::Nanos now = 1'700'000'000'000'000 + uniform(0, 1'000'000);
  for (int step = 0; step < 300; ++step) {
    int kind = static_cast<int>(uniform(0, 99));
    now += kind < 90   ? uniform(0, 3 * interval)
           : kind < 95 ? uniform(10, 200) * interval
                       : -uniform(0, interval);
    std::string where = fmt::format("seed {} ({} {}/{}us) step {} at {}", seed,
                                    core::algorithm_name(algorithm), count, period, step, now);
    if (!grants.empty() && uniform(0, 99) < 8) {
      Granted& granted = grants[static_cast<std::size_t>(uniform(0, grants.size() - 1))];
      if (!granted.given_back) {
        granted.given_back = true;
        core_key.give_back(algorithm, nanos, granted.core, now * k_micro);
        script.give_back(key, algorithm, micros, granted.script, now);
        ++totals.given_back;
      }
    } else if (uniform(0, 99) < 35) {
      core::Observation observation;
      observation.answered = true;
      observation.throttled = uniform(0, 99) < 30;
      // When the last cut came, before and after: -1 for no adaptive rate.
      auto cut_at = [&] {
        return core_key.stored && core_key.stored->server.adaptive
                   ? core_key.stored->server.adaptive->cut_at
                   : core::Nanos{-1};
      };
      core::Nanos before = cut_at();
      core_key.observe(now * k_micro, observation);
      script.observe(key, observation, now);
      if (observation.throttled && before >= 0) {
        ++(cut_at() != before ? totals.cuts : totals.grouped);
      }
    } else {
      core::Request request;
      request.cost = uniform(0, 9) == 0 ? uniform(1, std::min<std::int64_t>(count, 3)) : 1;
      request.reserve = uniform(0, 99) < 40;
      request.adaptive = uniform(0, 99) < 90;
      core::Request in_micros = request;
      request.now = now * k_micro;
      in_micros.now = now;
      core::Decision expected = core_key.decide({algorithm, true, nanos, request}).decision;
      core::Decision actual = script.decide(key, algorithm, true, micros, in_micros, true);
      CAPTURE(where);
      if (expected.allowed != actual.allowed ||
          (expected.allowed && expected.grant.at != actual.grant.at * k_micro) ||
          expected.adaptive_rate != actual.adaptive_rate ||
          expected.spaced_until != actual.spaced_until * k_micro) {
        FAIL_CHECK(where << ": core allowed " << expected.allowed << " at " << expected.grant.at
                         << " rate " << expected.adaptive_rate << " spaced "
                         << expected.spaced_until << "; script allowed " << actual.allowed << " at "
                         << actual.grant.at << " rate " << actual.adaptive_rate << " spaced "
                         << actual.spaced_until);
        return false;
      }
      totals.granted += expected.allowed;
      totals.spaced += expected.spaced_until != 0;
      if (expected.allowed) {
        grants.push_back({expected.grant, actual.grant});
      }
    }
    auto status = script.inspect(key, now);
    std::optional<core::AdaptiveState> expected =
        core_key.stored ? core_key.stored->server.adaptive : std::nullopt;
    std::optional<core::AdaptiveState> actual;
    if (status && status->state.server.adaptive) {
      actual = in_nanos(*status->state.server.adaptive);
    }
    if (expected != actual) {
      FAIL_CHECK(where << ": core " << describe(expected) << "; script " << describe(actual));
      return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("store::redis::RedisScript learns an adaptive rate exactly as the core does") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisConnection connection(server->location(), 2 * core::k_nanos_per_second);
  store::redis::RedisScript script(connection, "adaptive:");
  Totals totals;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    if (!compare_run(script, seed, totals)) {
      break;
    }
  }
  MESSAGE(fmt::format("adaptive, 40 runs: {} granted, {} given back, {} spaced by the rate, {} "
                      "cuts, {} throttles grouped with a cut",
                      totals.granted, totals.given_back, totals.spaced, totals.cuts,
                      totals.grouped));
  CHECK(totals.cuts > 40);
  CHECK(totals.grouped > 40);
  CHECK(totals.spaced > 200);
  CHECK(totals.given_back > 200);
}
