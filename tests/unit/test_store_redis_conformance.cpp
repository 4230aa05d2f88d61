// The Redis store's Lua script against the C++ core: the same arrivals through both, every
// decision compared. The script counts time in microseconds, so the core is run with
// microseconds too (it is pure integer arithmetic: the unit is the caller's); the store
// converts to and from nanoseconds around the script (see redis_store.hpp).
#include "conformance.hpp"
#include "core/decide.hpp"
#include "redis_server.hpp"
#include "store/redis/redis_connection.hpp"
#include "store/redis/redis_script.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <limits>
#include <random>
#include <string_view>

using namespace ratelimit;
using namespace ratelimit::conformance;

namespace {

constexpr core::Nanos k_second = 1'000'000; // in microseconds

// Both sides of one key: the core's key in memory, and the script. Requests name one of
// `limit_sets`, so that limits are dropped and named again along the way.
class Conformance : private conformance::Comparison {
public:
  Conformance(store::redis::RedisScript& script, core::Algorithm algorithm,
              std::vector<std::vector<core::Limit>> limit_sets, std::string key)
      : m_script(script), m_algorithm(algorithm), m_limit_sets(std::move(limit_sets)),
        m_key(std::move(key)) {
    m_side = "script";
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
        m_mirror.give_back(m_algorithm, granted_limits, granted.core, now);
        m_script.give_back(m_key, m_algorithm, granted_limits, granted.script, now);
        ++given;
      }
      if (arrival.observes) {
        core::Observation observation = observation_of(arrival, m_granted);
        core::KeyOutcome observed = m_mirror.observe(now, observation);
        store::PauseStanding actual = m_script.observe(m_key, observation, now);
        if (!same(observed.decision.now, actual.now, "observed at") ||
            !same_budget(observed.decision.budget, actual.budget)) {
          return false;
        }
      }
      core::Request request = request_of(arrival, now);
      core::Decision expected = m_mirror.decide({m_algorithm, true, limits, request}).decision;
      core::Decision actual = m_script.decide(m_key, m_algorithm, true, limits, request, true);
      if (!same_decision(expected, actual)) {
        return false;
      }
      if (expected.allowed) {
        m_grants.push_back({expected.grant, actual.grant, arrival.limit_set, false});
        m_granted.push_back(expected.grant);
      }
      ++(expected.allowed ? allowed : denied);
      held += expected.budget_until != 0 ? 1 : 0;
      if (i % 5 == 4 && !same_standing(now + arrival.advance / 2)) {
        return false;
      }
    }
    return true;
  }

  // How many grants were given back, and decisions the server budget held.
  int given = 0;
  int held = 0;

private:
  struct Granted {
    core::Grant core;
    core::Grant script;
    std::size_t limit_set = 0;
    bool given_back = false;
  };

  // The key's standing and stored state, as `status` would show them.
  bool same_standing(core::Nanos now) {
    m_where += fmt::format(", inspected at {}", now);
    std::optional<store::KeyStatus> actual = m_script.inspect(m_key, now);
    if (!m_mirror.stored) {
      return same(0, actual.has_value(), "stored");
    }
    if (!same(1, actual.has_value(), "stored")) {
      return false;
    }
    const core::KeyState& state = *m_mirror.stored;
    core::Decision expected = core::inspect(state, m_mirror.log, now);
    bool ok =
        same(state.clock, actual->state.clock, "clock") &&
        same(state.server.grant_seq, actual->state.server.grant_seq, "grant seq") &&
        same(1, state.server.budget == actual->state.server.budget, "budget entries") &&
        same(1, state.server.awaited == actual->state.server.awaited, "awaited answers") &&
        same(state.server.answered_at, actual->state.server.answered_at, "answered at") &&
        same(state.server.answer_latency, actual->state.server.answer_latency, "answer latency") &&
        same(expected.budget_until, actual->standing.budget_until, "budget until") &&
        same_budget(expected.budget, actual->standing.budget) &&
        same(state.log_period, actual->state.log_period, "log period") &&
        same(static_cast<std::int64_t>(state.limits.size()),
             static_cast<std::int64_t>(actual->state.limits.size()), "limits") &&
        same(expected.now, actual->standing.now, "now") &&
        same(expected.allowed, actual->standing.allowed, "allowed") &&
        same(expected.wait, actual->standing.wait, "wait") &&
        same(expected.remaining, actual->standing.remaining, "remaining") &&
        same(expected.reset_after, actual->standing.reset_after, "reset_after") &&
        same(static_cast<std::int64_t>(expected.binding),
             static_cast<std::int64_t>(actual->standing.binding), "binding");
    for (std::size_t i = 0; ok && i < state.limits.size(); ++i) {
      ok =
          state.limits[i] == actual->state.limits[i] || same(0, 1, "stored limit and slots differ");
      ok = ok && same(expected.limits[i].remaining, actual->standing.limits[i].remaining,
                      "limit remaining");
      ok = ok && same(expected.limits[i].retry_after, actual->standing.limits[i].retry_after,
                      "limit retry_after");
    }
    return ok;
  }

  store::redis::RedisScript& m_script;
  core::Algorithm m_algorithm;
  std::vector<std::vector<core::Limit>> m_limit_sets;
  std::string m_key;
  MemoryKey m_mirror;
  std::vector<Granted> m_grants;
  std::vector<core::Grant> m_granted; // the core's grants, in order
};

} // namespace

namespace {

// Which conformance runs a server replays: every one, or one configuration per algorithm
// (several limits, limit sets that change) where only the way to the server differs.
enum class Coverage { every_run, one_per_algorithm };

// The conformance runs (conformance.hpp) of `coverage`, on `server`.
void check_conformance(const test::RedisServer& server, Coverage coverage) {
  store::redis::RedisConnection connection(server.location(), 2 * core::k_nanos_per_second);
  store::redis::RedisScript script(connection, "conformance:");
  std::size_t replayed = 0;
  for (const Run& run : runs(k_second)) {
    if (coverage == Coverage::one_per_algorithm &&
        std::string_view(run.configuration.name) != "2/100ms, 10/s, 50/min") {
      continue;
    }
    ++replayed;
    std::string key =
        fmt::format("{} {}", core::algorithm_name(run.algorithm), run.configuration.name);
    CAPTURE(key);
    Conformance conformance(script, run.algorithm, run.limit_sets, key);
    CHECK(conformance.run(run.configuration.start, run.arrivals));
    CHECK(conformance.allowed > 25);
    CHECK(conformance.denied > 25);
    CHECK(conformance.given >= 3);
  }
  if (coverage == Coverage::one_per_algorithm) {
    CHECK(replayed == std::size(core::k_all_algorithms));
    return;
  }
  // With answers observed (conformance.hpp's budget_runs): the script keeps the server's word
  // as the core does.
  int held = 0;
  for (const Run& run : budget_runs(k_second)) {
    std::string key =
        fmt::format("{} {} budget", core::algorithm_name(run.algorithm), run.configuration.name);
    CAPTURE(key);
    Conformance conformance(script, run.algorithm, run.limit_sets, key);
    CHECK(conformance.run(run.configuration.start, run.arrivals));
    held += conformance.held;
  }
  CHECK(held > 20);
}

} // namespace

TEST_CASE("store::redis::RedisScript decides exactly as core::decide, for every algorithm") {
  RATELIMIT_REDIS_SERVER(server);
  check_conformance(*server, Coverage::every_run);
}

// Decisions with the commands and replies carried over TLS (rediss://): one run of each
// algorithm, whose scripts and replies the test above checks in full over TCP.
TEST_CASE("store::redis::RedisScript decides exactly as core::decide over TLS") {
  std::string why;
  auto server = test::RedisServer::start_tls(why);
  if (!server) {
    if (test::redis_required()) {
      FAIL("a TLS redis-server is required: " << why);
    }
    MESSAGE("skipped, " << why);
    return;
  }
  check_conformance(*server, Coverage::one_per_algorithm);
}

TEST_CASE("store::redis::RedisScript agrees with the core on a hand-made token-bucket table") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisConnection connection(server->location(), 2 * core::k_nanos_per_second);
  store::redis::RedisScript script(connection, "conformance:");
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
    CHECK(
        script.decide(key, core::Algorithm::token_bucket, true, {&two_per_second, 1}, request, true)
            .allowed);
  }
  core::Decision third =
      script.decide(key, core::Algorithm::token_bucket, true, {&two_per_second, 1}, request, true);
  CHECK_FALSE(third.allowed);
  CHECK(third.wait == 500'000);
}

TEST_CASE("store::redis::RedisScript gives back any sliding-log grant, not only the latest") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisConnection connection(server->location(), 2 * core::k_nanos_per_second);
  store::redis::RedisScript script(connection, "conformance:");
  std::string key = "sliding-log give back";
  script.reset(key);
  core::Limit three = limit(3, k_second);
  core::Nanos t0 = 1'700'000'000'000'000;
  std::vector<core::Grant> grants;
  for (int i = 0; i < 3; ++i) {
    core::Request request{t0 + i * 100'000, 1, false, k_no_limit};
    core::Decision decision =
        script.decide(key, core::Algorithm::sliding_log, true, {&three, 1}, request, true);
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
