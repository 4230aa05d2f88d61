// The SQLite store against the C++ core: the same arrivals through both, every decision
// compared, the store reading a fake clock (in nanoseconds, the store's unit).
#include "conformance.hpp"
#include "core/bounds.hpp"
#include "core/decide.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

using namespace ratelimit;
using namespace ratelimit::conformance;

using test::TemporaryDatabase;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;

// Both sides of one key: the core with the store's rule that only a granted decision, or
// one that changed a stored key's limits, is written; and the store at the same times.
//
// The store also collects fresh keys now and then inside `decide`. A collected key comes
// back as a new key (clock 0, no limits), so the mirror follows: when the key has vanished
// from the store after a decision, the core's state must have been fresh then, and the core
// goes on from a new key too. A fresh state decides like a new key at any later time, but
// not necessarily after the clock steps back past the state's own clock (a new key has no
// clock to hold the past against); hence the mirror restarts from a new key rather than
// assuming the two interchangeable, and the neutrality is checked only for arrivals at or
// after the time of the collection.
class Conformance : private Comparison {
public:
  Conformance(store::sqlite::SqliteStore& store, core::Nanos& clock, core::Algorithm algorithm,
              std::vector<std::vector<core::Limit>> limit_sets, std::string key)
      : m_store(store), m_clock(clock), m_algorithm(algorithm), m_limit_sets(std::move(limit_sets)),
        m_key(std::move(key)) {
    m_side = "sqlite";
    std::vector<std::string> keys{m_key};
    m_store.reset(keys, false);
  }

  int allowed = 0;
  int denied = 0;
  int given = 0;
  int collected = 0;
  int held = 0; // decisions whose slot the server budget held

  // Runs `arrivals` from `start`; false at the first disagreement (already reported).
  bool run(core::Nanos start, const std::vector<Arrival>& arrivals) {
    core::Nanos now = start;
    std::optional<core::Nanos> collected_at;
    MemoryKey before_collection;
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      const Arrival& arrival = arrivals[i];
      now += arrival.advance;
      m_clock = now;
      const std::vector<core::Limit>& limits = m_limit_sets.at(arrival.limit_set);
      m_where = fmt::format("{} arrival {} at {} (cost {}, {}, {} limits)", m_key, i, now,
                            arrival.cost, arrival.reserve ? "wait" : "try", limits.size());
      if (arrival.give_back >= 0 && arrival.give_back < static_cast<int>(m_grants.size()) &&
          !m_grants[arrival.give_back].given_back) {
        Granted& granted = m_grants[arrival.give_back];
        granted.given_back = true;
        const std::vector<core::Limit>& granted_limits = m_limit_sets[granted.limit_set];
        m_mirror.give_back(m_algorithm, granted_limits, granted.core, now);
        m_store.give_back(m_key, m_algorithm, granted_limits, granted.store);
        ++given;
        collected_at.reset(); // the states differ from here on, by what was given back
      }
      if (arrival.observes && !observe(now, arrival)) {
        return false;
      }
      // A collection before the decision: the key's state is forgotten whenever gc finds it
      // fresh, as after a long pause between arrivals; the decision below must not mind.
      if (i % 7 == 3) {
        m_store.collect_garbage();
        if (!forgotten(now, before_collection, collected_at)) {
          return false;
        }
      }
      core::Request request = request_of(arrival, now);
      if (collected_at && now >= *collected_at) {
        // The collection changed no decision: the state it forgot decides the same.
        core::KeyCall call{m_algorithm, true, limits, request};
        MemoryKey kept_key = before_collection;
        core::Decision kept = kept_key.decide(call).decision;
        MemoryKey renewed = m_mirror;
        core::Decision fresh = renewed.decide(call).decision;
        if (!same(kept.allowed, fresh.allowed, "collected key allowed") ||
            !same(kept.wait, fresh.wait, "collected key wait") ||
            !same(kept.remaining, fresh.remaining, "collected key remaining")) {
          return false;
        }
      }
      collected_at.reset();
      core::Decision expected = m_mirror.decide({m_algorithm, true, limits, request}).decision;
      core::Decision actual = m_store.decide(m_key, m_algorithm, true, limits, request);
      if (!same_decision(expected, actual)) {
        return false;
      }
      if (expected.allowed) {
        m_grants.push_back({expected.grant, actual.grant, arrival.limit_set, false});
        m_granted.push_back(expected.grant);
      }
      ++(expected.allowed ? allowed : denied);
      held += expected.budget_until != 0 ? 1 : 0;
      if (i % 7 == 6) {
        // Now and then the `gc` command as well, which collects every fresh key: the
        // collection inside `decide` rarely finds this key fresh just after its decision.
        m_store.collect_garbage();
      }
      if (!forgotten(now, before_collection, collected_at)) {
        return false;
      }
      if (i % 5 == 4 && !same_standing(now + arrival.advance / 2)) {
        return false;
      }
    }
    return true;
  }

private:
  // An answer observed on both sides at `now`; the budget after it compared. False on a
  // disagreement (reported).
  bool observe(core::Nanos now, const Arrival& arrival) {
    core::Observation observation = observation_of(arrival, m_granted);
    core::KeyOutcome expected = m_mirror.observe(now, observation);
    store::PauseStanding actual = m_store.observe(m_key, observation);
    return same(expected.decision.now, actual.now, "observed at") &&
           same_budget(expected.decision.budget, actual.budget);
  }

  // When the store no longer holds the key that the mirror holds, the key was collected (by
  // `gc`, or by a decision): its state must have been fresh at `now`. The mirror then goes
  // on from a new key, keeping what it forgot to check that it decides the same. False on
  // a disagreement (reported).
  bool forgotten(core::Nanos now, MemoryKey& before_collection,
                 std::optional<core::Nanos>& collected_at) {
    std::vector<std::string> keys{m_key};
    if (!m_mirror.stored || !m_store.status(keys).empty()) {
      return true;
    }
    if (!same(1, m_mirror.fresh(now), "collected key was fresh")) {
      return false;
    }
    before_collection = m_mirror;
    collected_at = now;
    m_mirror = MemoryKey{};
    ++collected;
    return true;
  }

  struct Granted {
    core::Grant core;
    core::Grant store;
    std::size_t limit_set = 0;
    bool given_back = false;
  };

  // The key's standing and stored state, as `status` shows them.
  bool same_standing(core::Nanos now) {
    m_where += fmt::format(", inspected at {}", now);
    m_clock = now;
    std::vector<std::string> keys{m_key};
    std::vector<store::KeyStatus> actual = m_store.status(keys);
    if (!m_mirror.stored) {
      return same(0, static_cast<std::int64_t>(actual.size()), "stored");
    }
    if (!same(1, static_cast<std::int64_t>(actual.size()), "stored")) {
      return false;
    }
    const store::KeyStatus& got = actual.front();
    const core::KeyState& state = *m_mirror.stored;
    core::Decision expected = core::inspect(state, m_mirror.log, now);
    bool ok =
        same(state.clock, got.state.clock, "clock") &&
        same(state.server.grant_seq, got.state.server.grant_seq, "grant seq") &&
        same(1, state.server.budget == got.state.server.budget, "budget entries") &&
        same(1, state.server.awaited == got.state.server.awaited, "awaited answers") &&
        same(state.server.answered_at, got.state.server.answered_at, "answered at") &&
        same(state.server.answer_latency, got.state.server.answer_latency, "answer latency") &&
        same(expected.budget_until, got.standing.budget_until, "budget until") &&
        same_budget(expected.budget, got.standing.budget) &&
        same(state.log_period, got.state.log_period, "log period") &&
        same(static_cast<std::int64_t>(state.limits.size()),
             static_cast<std::int64_t>(got.state.limits.size()), "limits") &&
        same(expected.now, got.standing.now, "now") &&
        same(expected.allowed, got.standing.allowed, "allowed") &&
        same(expected.wait, got.standing.wait, "wait") &&
        same(expected.remaining, got.standing.remaining, "remaining") &&
        same(expected.reset_after, got.standing.reset_after, "reset_after") &&
        same(static_cast<std::int64_t>(expected.binding),
             static_cast<std::int64_t>(got.standing.binding), "binding");
    for (std::size_t i = 0; ok && i < state.limits.size(); ++i) {
      ok = state.limits[i] == got.state.limits[i] || same(0, 1, "stored limit and slots differ");
      ok = ok &&
           same(expected.limits[i].remaining, got.standing.limits[i].remaining, "limit remaining");
    }
    return ok;
  }

  store::sqlite::SqliteStore& m_store;
  core::Nanos& m_clock;
  core::Algorithm m_algorithm;
  std::vector<std::vector<core::Limit>> m_limit_sets;
  std::string m_key;
  MemoryKey m_mirror;
  std::vector<Granted> m_grants;
  std::vector<core::Grant> m_granted; // the core's grants, in order
};

} // namespace

TEST_CASE("store::sqlite::SqliteStore decides exactly as core::decide, for every algorithm") {
  TemporaryDatabase database;
  core::Nanos clock = 0;
  store::sqlite::SqliteStore store(database.path(), 2 * k_second, store::Creation::if_missing,
                                   [&clock] { return clock; });
  int collected = 0;
  for (const Run& run : runs(k_second)) {
    if (run.configuration.start > core::k_max_time / 2) {
      continue; // in nanoseconds, past the latest time the store accepts
    }
    std::string key =
        fmt::format("{} {}", core::algorithm_name(run.algorithm), run.configuration.name);
    CAPTURE(key);
    Conformance conformance(store, clock, run.algorithm, run.limit_sets, key);
    CHECK(conformance.run(run.configuration.start, run.arrivals));
    CHECK(conformance.allowed > 25);
    CHECK(conformance.denied > 25);
    CHECK(conformance.given >= 3);
    collected += conformance.collected;
  }
  CHECK(collected > 0);
}

TEST_CASE("store::sqlite::SqliteStore decides as core::decide with what servers said, for "
          "every algorithm") {
  TemporaryDatabase database;
  core::Nanos clock = 0;
  store::sqlite::SqliteStore store(database.path(), 2 * k_second, store::Creation::if_missing,
                                   [&clock] { return clock; });
  int held = 0;
  for (const Run& run : budget_runs(k_second)) {
    std::string key =
        fmt::format("{} {} budget", core::algorithm_name(run.algorithm), run.configuration.name);
    CAPTURE(key);
    Conformance conformance(store, clock, run.algorithm, run.limit_sets, key);
    CHECK(conformance.run(run.configuration.start, run.arrivals));
    CHECK(conformance.allowed > 25);
    CHECK(conformance.denied > 25);
    held += conformance.held;
  }
  // Some decisions were held by the budget.
  CHECK(held > 20);
}

TEST_CASE("store::sqlite::SqliteStore collects a key exactly when the core says it is fresh") {
  TemporaryDatabase database;
  core::Nanos clock = 1'700'000'000 * k_second;
  store::sqlite::SqliteStore store(database.path(), 2 * k_second, store::Creation::if_missing,
                                   [&clock] { return clock; });
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    std::string key = fmt::format("expiry {}", core::algorithm_name(algorithm));
    CAPTURE(key);
    std::vector<core::Limit> limits{limit(3, k_second, core::takes_burst(algorithm) ? 5 : 0),
                                    limit(10, 7 * k_second)};
    core::KeyState state{algorithm, 0, {}};
    core::MemoryGrantLog log;
    core::Nanos start = clock;
    for (int i = 0; i < 4; ++i) {
      clock = start + i * (k_second / 10);
      core::Request request{clock, 1, false, k_no_limit};
      core::Decision expected = core::decide(state, limits, log, request);
      core::Decision actual = store.decide(key, algorithm, true, limits, request);
      REQUIRE(expected.allowed == actual.allowed);
    }
    // The first time the core calls the state fresh, to the nanosecond.
    core::Nanos low = clock;
    core::Nanos high = clock + 60 * k_second;
    REQUIRE_FALSE(core::is_fresh(state, log, low));
    REQUIRE(core::is_fresh(state, log, high));
    while (high - low > 1) {
      core::Nanos middle = low + (high - low) / 2;
      (core::is_fresh(state, log, middle) ? high : low) = middle;
    }
    std::vector<std::string> keys{key};
    clock = low;
    CHECK(store.collect_garbage().empty());
    CHECK(store.status(keys).size() == 1);
    clock = high;
    std::vector<std::string> removed = store.collect_garbage();
    CHECK(removed == keys);
    CHECK(store.status(keys).empty());
    clock = high + k_second;
  }
}

TEST_CASE("store::sqlite::SqliteStore: a call that chooses no algorithm uses the key's own") {
  TemporaryDatabase database;
  core::Nanos clock = 1'700'000'000 * k_second;
  store::sqlite::SqliteStore store(database.path(), 2 * k_second, store::Creation::if_missing,
                                   [&clock] { return clock; });
  std::vector<core::Limit> limits{limit(3, k_second, 3)};
  core::Request request{clock, 1, false, k_no_limit};
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    std::string key(core::algorithm_name(algorithm));
    CAPTURE(key);
    clock += 10 * k_second;
    request.now = clock;
    core::KeyState state{algorithm, 0, {}};
    core::MemoryGrantLog log;
    core::decide(state, limits, log, request);
    REQUIRE(store.decide(key, algorithm, true, limits, request).algorithm == algorithm);
    // The default decides as the key's own algorithm would, and names it.
    clock += k_second / 10;
    request.now = clock;
    core::Decision expected = core::decide(state, limits, log, request);
    core::Decision actual = store.decide(key, core::Algorithm::sliding_log, false, limits, request);
    CHECK(actual.algorithm == algorithm);
    CHECK(actual.allowed == expected.allowed);
    CHECK(actual.remaining == expected.remaining);
    // Chosen, another algorithm is refused while the key is in use.
    core::Algorithm other = algorithm == core::Algorithm::token_bucket
                                ? core::Algorithm::sliding_log
                                : core::Algorithm::token_bucket;
    CHECK_THROWS_AS(store.decide(key, other, true, limits, request), store::KeyConflict);
    // Once the key is fresh, the default takes it up.
    clock += 10 * k_second;
    request.now = clock;
    CHECK(store.decide(key, core::Algorithm::sliding_log, false, limits, request).algorithm ==
          core::Algorithm::sliding_log);
  }
}
