// The Redis store's Lua script against the C++ core: the same arrivals through both, every
// decision compared. The script counts time in microseconds, so the core is run with
// microseconds too (it is pure integer arithmetic: the unit is the caller's); the store
// converts to and from nanoseconds around the script (see redis_store.hpp).
#include "core/decide.hpp"
#include "redis_server.hpp"
#include "store/redis_connection.hpp"
#include "store/redis_script.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <limits>
#include <random>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_no_limit = std::numeric_limits<core::Nanos>::max();
constexpr core::Nanos k_second = 1'000'000; // in microseconds

struct Arrival {
  core::Nanos advance = 0; // after the previous arrival; negative: the clock stepped back
  std::int64_t cost = 1;
  bool reserve = false;
  core::Nanos max_wait = k_no_limit;
  int give_back = -1;        // before deciding, give back this earlier grant (an index)
  std::size_t limit_set = 0; // the limits the request names, an index into the key's sets
};

core::Limit limit(std::int64_t count, core::Nanos period, std::int64_t burst = 0) {
  return {{count, period}, burst ? burst : count};
}

// Both sides of one key: the core with the SQLite store's rule that only a granted decision,
// or one that changed the key's limits, is written, and the script. Requests name one of
// `limit_sets`, so that limits are dropped and named again along the way.
class Conformance {
public:
  Conformance(store::RedisScript& script, core::Algorithm algorithm,
              std::vector<std::vector<core::Limit>> limit_sets, std::string key)
      : m_script(script), m_algorithm(algorithm), m_limit_sets(std::move(limit_sets)),
        m_key(std::move(key)), m_state{algorithm, 0, {}} {
    m_script.reset(m_key);
  }

  // Runs `arrivals` from `start`; false at the first disagreement (already reported).
  // How many decisions were granted and denied, to show that a table tests both.
  int allowed = 0;
  int denied = 0;

  bool run(core::Nanos start, const std::vector<Arrival>& arrivals) {
    core::Nanos now = start;
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      const Arrival& arrival = arrivals[i];
      now += arrival.advance;
      const std::vector<core::Limit>& limits = m_limit_sets.at(arrival.limit_set);
      m_where = fmt::format("{} arrival {} at {} (cost {}, {}, {} limits)", m_key, i, now,
                            arrival.cost, arrival.reserve ? "wait" : "try", limits.size());
      if (arrival.give_back >= 0 && arrival.give_back < static_cast<int>(m_grants.size()) &&
          !m_grants[arrival.give_back].given_back) {
        // Each grant at most once, with the limits it was decided under.
        Granted& granted = m_grants[arrival.give_back];
        granted.given_back = true;
        const std::vector<core::Limit>& granted_limits = m_limit_sets[granted.limit_set];
        core::give_back(m_state, granted_limits, m_log, now, granted.core);
        m_script.give_back(m_key, m_algorithm, granted_limits, granted.script, now);
        ++given;
      }
      core::Request request{now, arrival.cost, arrival.reserve, arrival.max_wait};
      core::KeyState trial = m_state;
      core::Decision expected = core::decide(trial, limits, m_log, request);
      // A denied call writes only when it changed a stored key's limits.
      if (expected.allowed || (!m_state.limits.empty() && trial.limits != m_state.limits)) {
        m_state = trial;
      }
      core::Decision actual = m_script.decide(m_key, m_algorithm, limits, request, true);
      if (!same_decision(expected, actual)) {
        return false;
      }
      if (expected.allowed) {
        m_grants.push_back({expected.grant, actual.grant, arrival.limit_set, false});
      }
      ++(expected.allowed ? allowed : denied);
      if (i % 5 == 4 && !same_standing(now + arrival.advance / 2)) {
        return false;
      }
    }
    return true;
  }

  // How many grants were given back.
  int given = 0;

private:
  struct Granted {
    core::Grant core;
    core::Grant script;
    std::size_t limit_set = 0;
    bool given_back = false;
  };

  bool same(std::int64_t expected, std::int64_t actual, const char* what) {
    if (expected == actual) {
      return true;
    }
    FAIL_CHECK(m_where << ": " << std::string(what) << ": core " << expected << ", script "
                       << actual);
    return false;
  }

  bool same_decision(const core::Decision& expected, const core::Decision& actual) {
    bool ok = same(expected.allowed, actual.allowed, "allowed") &&
              same(expected.now, actual.now, "now") && same(expected.wait, actual.wait, "wait") &&
              same(static_cast<std::int64_t>(expected.binding),
                   static_cast<std::int64_t>(actual.binding), "binding") &&
              same(expected.remaining, actual.remaining, "remaining") &&
              same(expected.reset_after, actual.reset_after, "reset_after") &&
              same(expected.grant.at, actual.grant.at, "grant at") &&
              same(expected.grant.cost, actual.grant.cost, "grant cost") &&
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

  // The key's standing and stored state, as `status` would show them.
  bool same_standing(core::Nanos now) {
    m_where += fmt::format(", inspected at {}", now);
    std::optional<store::KeyStatus> actual = m_script.inspect(m_key, now);
    if (m_state.limits.empty()) {
      return same(0, actual.has_value(), "stored");
    }
    if (!same(1, actual.has_value(), "stored")) {
      return false;
    }
    core::Decision expected = core::inspect(m_state, m_log, now);
    bool ok = same(m_state.clock, actual->state.clock, "clock") &&
              same(m_state.log_period, actual->state.log_period, "log period") &&
              same(static_cast<std::int64_t>(m_state.limits.size()),
                   static_cast<std::int64_t>(actual->state.limits.size()), "limits") &&
              same(expected.now, actual->standing.now, "now") &&
              same(expected.allowed, actual->standing.allowed, "allowed") &&
              same(expected.wait, actual->standing.wait, "wait") &&
              same(expected.remaining, actual->standing.remaining, "remaining") &&
              same(expected.reset_after, actual->standing.reset_after, "reset_after") &&
              same(static_cast<std::int64_t>(expected.binding),
                   static_cast<std::int64_t>(actual->standing.binding), "binding");
    for (std::size_t i = 0; ok && i < m_state.limits.size(); ++i) {
      ok = m_state.limits[i] == actual->state.limits[i] ||
           same(0, 1, "stored limit and slots differ");
      ok = ok && same(expected.limits[i].remaining, actual->standing.limits[i].remaining,
                      "limit remaining");
      ok = ok && same(expected.limits[i].retry_after, actual->standing.limits[i].retry_after,
                      "limit retry_after");
    }
    return ok;
  }

  store::RedisScript& m_script;
  core::Algorithm m_algorithm;
  std::vector<std::vector<core::Limit>> m_limit_sets;
  std::string m_key;
  core::KeyState m_state;
  core::MemoryGrantLog m_log;
  std::vector<Granted> m_grants;
  std::string m_where;
};

// A reproducible table of arrivals for `limits`: bursts, pauses, steps back, waits with and
// without a timeout, grants given back, and requests naming another of `limit_sets` of
// `limit_sets` sets (the first is `limits`).
std::vector<Arrival> random_arrivals(std::uint64_t seed, core::Algorithm algorithm,
                                     const std::vector<core::Limit>& limits, std::size_t limit_sets,
                                     int count) {
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

std::vector<Configuration> configurations(core::Algorithm algorithm) {
  bool bucket = core::takes_burst(algorithm);
  core::Nanos t0 = 1'700'000'000'123'457;
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
      {"1e8/day late", {limit(100'000'000, 86'400 * k_second)}, 4'600'000'000'000'000},
  };
}

// `limits`, then each of its limits dropped in turn, the first with a larger count (and
// burst), with a longer period, and with a smaller burst: what a key meets when callers name
// different limits.
std::vector<std::vector<core::Limit>> limit_sets(const std::vector<core::Limit>& limits) {
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

} // namespace

TEST_CASE("store::RedisScript decides exactly as core::decide, for every algorithm") {
  RATELIMIT_REDIS_SERVER(server);
  store::RedisConnection connection(server->location(), 2 * core::k_nanos_per_second);
  store::RedisScript script(connection, "conformance:");
  std::uint64_t seed = 1;
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    for (const Configuration& configuration : configurations(algorithm)) {
      std::string key = fmt::format("{} {}", core::algorithm_name(algorithm), configuration.name);
      CAPTURE(key);
      auto sets = limit_sets(configuration.limits);
      Conformance conformance(script, algorithm, sets, key);
      auto arrivals = random_arrivals(seed++, algorithm, configuration.limits, sets.size(), 250);
      CHECK(conformance.run(configuration.start, arrivals));
      CHECK(conformance.allowed > 25);
      CHECK(conformance.denied > 25);
      CHECK(conformance.given >= 3);
    }
  }
}

TEST_CASE("store::RedisScript agrees with the core on a hand-made token-bucket table") {
  RATELIMIT_REDIS_SERVER(server);
  store::RedisConnection connection(server->location(), 2 * core::k_nanos_per_second);
  store::RedisScript script(connection, "conformance:");
  // 2/s burst 2: two at once, a denial, a reservation given back, the clock stepping back.
  std::vector<Arrival> arrivals = {
      {0, 1, false},         {0, 1, false},
      {0, 1, false},         {0, 1, true},
      {0, 2, true, 400'000}, {100'000, 1, false, k_no_limit, 0},
      {-900'000, 1, false},  {1'400'000, 2, false},
      {0, 1, true, 0},       {5'000'000, 1, false, k_no_limit, 2},
  };
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    std::string key = fmt::format("table {}", core::algorithm_name(algorithm));
    CAPTURE(key);
    Conformance conformance(script, algorithm, {{limit(2, k_second)}}, key);
    CHECK(conformance.run(1'700'000'000'000'000, arrivals));
  }
  // And the table means what it says: the third try is denied for half a second.
  std::string key = "table check";
  script.reset(key);
  core::Limit two_per_second = limit(2, k_second);
  core::Request request{1'700'000'000'000'000, 1, false, k_no_limit};
  for (int i = 0; i < 2; ++i) {
    CHECK(script.decide(key, core::Algorithm::token_bucket, {&two_per_second, 1}, request, true)
              .allowed);
  }
  core::Decision third =
      script.decide(key, core::Algorithm::token_bucket, {&two_per_second, 1}, request, true);
  CHECK_FALSE(third.allowed);
  CHECK(third.wait == 500'000);
}

TEST_CASE("store::RedisScript gives back any sliding-log grant, not only the latest") {
  RATELIMIT_REDIS_SERVER(server);
  store::RedisConnection connection(server->location(), 2 * core::k_nanos_per_second);
  store::RedisScript script(connection, "conformance:");
  std::string key = "sliding-log give back";
  script.reset(key);
  core::Limit three = limit(3, k_second);
  core::Nanos t0 = 1'700'000'000'000'000;
  std::vector<core::Grant> grants;
  for (int i = 0; i < 3; ++i) {
    core::Request request{t0 + i * 100'000, 1, false, k_no_limit};
    core::Decision decision =
        script.decide(key, core::Algorithm::sliding_log, {&three, 1}, request, true);
    REQUIRE(decision.allowed);
    grants.push_back(decision.grant);
  }
  core::Nanos later = t0 + 300'000;
  // The first, then the second, whose marker the first one's return made stale.
  script.give_back(key, core::Algorithm::sliding_log, {&three, 1}, grants[0], later);
  script.give_back(key, core::Algorithm::sliding_log, {&three, 1}, grants[1], later);
  std::optional<store::KeyStatus> status = script.inspect(key, later);
  REQUIRE(status);
  REQUIRE(status->state.limits.size() == 1);
  CHECK(status->state.limits[0].slots[0] == t0 + 200'000); // the third grant is left
  CHECK(status->state.limits[0].slots[1] == 1);
  CHECK(status->standing.remaining == 2);
}
