// The differential check: random scenarios on one key (differential.hpp) through a store and
// through the core's key in memory (core/key_life.hpp), every answer compared. The SQLite
// store reads a fake clock in nanoseconds, as the core does. The Redis store is given an
// explicit clock too and converts, as it always does, nanoseconds to the script's whole
// microseconds and back: the core beside it decides in microseconds, with what that
// conversion makes of the call (now and max_wait rounded down, periods and pauses up), and
// its answers are scaled back. A failure tells the first answer that differs, in words.
// See differential.hpp for the environment that sets the seeds and the length of a run;
// test_store_differential_expiry.cpp and test_store_differential_run_slots.cpp hold the
// checks of Redis on its own clock and of the run slots' script.
#include "conformance.hpp"
#include "core/bounds.hpp"
#include "core/rules.hpp"
#include "differential.hpp"
#include "redis_server.hpp"
#include "store/redis/redis_store.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace ratelimit;
using namespace ratelimit::differential;
using conformance::MemoryKey;

namespace {

// What the runs of one check did, to show that they exercise what they claim to.
struct Counts {
  std::uint64_t runs = 0;
  std::uint64_t steps = 0;
  std::uint64_t granted = 0;
  std::uint64_t denied = 0;
  std::uint64_t conflicts = 0;
  std::uint64_t taken_over = 0; // a key taken by another algorithm once fresh
  std::uint64_t paused = 0;     // decisions while a pause ran
  std::uint64_t pauses = 0;
  std::uint64_t given_back = 0;
  std::uint64_t statuses = 0;
  std::uint64_t collected = 0; // keys the store forgot (gc), found fresh by the core
  std::uint64_t on_boundary = 0;
  std::uint64_t stepped_back = 0;
  std::uint64_t too_far = 0;    // refused for a slot past the latest time counted
  std::uint64_t left_model = 0; // Redis runs ended where microseconds no longer model it
  std::size_t most_remembered = 0;
  std::uint64_t at_remembered_cap = 0; // steps after which a bucket remembers all it may

  std::string summary() const {
    return fmt::format("{} runs, {} steps: {} granted, {} denied, {} conflicts, {} keys taken "
                       "over by another algorithm, {} decisions during a pause, {} pauses, {} "
                       "given back, {} statuses, {} keys collected, {} steps on a window "
                       "boundary, {} clock steps back, {} refused as too far, at most {} "
                       "limits remembered ({} steps at core::k_max_remembered); {} runs ended "
                       "early, beyond the range where the core in microseconds models the "
                       "script",
                       runs, steps, granted, denied, conflicts, taken_over, paused, pauses,
                       given_back, statuses, collected, on_boundary, stepped_back, too_far,
                       most_remembered, at_remembered_cap, left_model);
  }
};

// One store beside the core on the key of one scenario.
class Check {
public:
  // `micros`: the store counts whole microseconds (Redis).
  Check(store::Store& store, core::Nanos& clock, bool micros, const char* side,
        std::function<void(std::uint64_t)> collect = nullptr)
      : m_store(store), m_clock(clock), m_micros(micros), m_side(side),
        m_collect(std::move(collect)) {}

  // Runs `scenario`; false at the first difference (reported).
  bool run(const Scenario& scenario, Counts& counts) {
    m_scenario = &scenario;
    m_key = fmt::format("differential {}", scenario.seed);
    m_mirror = MemoryKey{};
    m_grants.clear();
    m_left_model = false;
    std::vector<std::string> keys{m_key};
    m_store.reset(keys, false);
    core::Nanos now = scenario.start;
    for (m_step = 0; m_step < scenario.steps.size(); ++m_step) {
      const Step& step = scenario.steps[m_step];
      now += step.advance;
      m_now = now;
      m_clock = now;
      ++counts.steps;
      counts.stepped_back += step.advance < 0;
      for (const core::Rate& rate : scenario.limit_sets[step.limit_set].rates) {
        counts.on_boundary += now % rate.period == 0;
      }
      bool same = true;
      switch (step.op) {
      case Op::decide:
        same = decide(step, counts);
        break;
      case Op::give_back:
        give_back(step, counts);
        break;
      case Op::pause:
        same = pause(step, counts);
        break;
      case Op::status:
        same = same_status(counts);
        break;
      case Op::collect:
        if (m_collect) {
          m_collect(scenario.seed);
        }
        break;
      }
      if (m_left_model) {
        ++counts.left_model;
        m_store.reset(keys, false);
        return true;
      }
      if (!same || !follow_collection(counts)) {
        return false;
      }
      if (m_mirror.stored) {
        std::size_t remembered = m_mirror.stored->remembered.size();
        counts.most_remembered = std::max(counts.most_remembered, remembered);
        counts.at_remembered_cap += remembered == core::k_max_remembered;
      }
    }
    m_store.reset(keys, false);
    ++counts.runs;
    return true;
  }

private:
  struct Granted {
    core::Algorithm algorithm;
    std::vector<core::Limit> limits;
    core::Grant core;
    core::Grant store;
    bool given_back = false;
  };

  // The core's view of a time or duration of the store's callers, and back.
  core::Nanos time_for_core(core::Nanos t) const {
    return m_micros ? core::floor_div(t, k_micro) : t;
  }
  core::Nanos duration_for_core(core::Nanos d) const {
    return m_micros ? core::ceil_div(d, k_micro) : d;
  }
  core::Nanos from_core(core::Nanos t) const { return m_micros ? t * k_micro : t; }

  std::vector<core::Limit> limits_for_core(const std::vector<core::Limit>& limits) const {
    std::vector<core::Limit> result = limits;
    for (core::Limit& limit : result) {
      limit.rate.period = duration_for_core(limit.rate.period);
    }
    return result;
  }

  core::Decision decision_from_core(const core::Decision& d) const {
    return m_micros ? in_nanos(d) : d;
  }

  core::KeyState state_from_core(core::KeyState state) const {
    state.clock = from_core(state.clock);
    state.log_period = from_core(state.log_period);
    state.paused_until = from_core(state.paused_until);
    const std::array<core::SlotKind, 3>& kinds = core::info(state.algorithm).slots;
    for (auto* list : {&state.limits, &state.remembered}) {
      for (core::LimitState& limit : *list) {
        limit.limit.rate.period = from_core(limit.limit.rate.period);
        for (std::size_t i = 0; i < kinds.size(); ++i) {
          if (kinds[i] == core::SlotKind::time) {
            limit.slots[i] = from_core(limit.slots[i]);
          }
        }
      }
    }
    return state;
  }

  // Whether the core in microseconds still models the Redis script after `decision`: the
  // core's bounds (k_max_time) and rescale's saturation are in nanoseconds, the script's
  // the same durations in microseconds; a key whose times reach past them (debts of decades,
  // carried between rates far apart), or near enough to the latest time that a grant of
  // `cost` under `limits` could, is beyond the model, and the run ends there. Always true
  // for the SQLite store.
  bool within_model(const core::Decision& decision, std::span<const core::Limit> limits = {},
                    std::int64_t cost = 0) {
    if (!m_micros) {
      return true;
    }
    core::Nanos reach = 0;
    for (const core::Limit& limit : limits) {
      reach = std::max(reach, limit.rate.period + cost * limit.rate.emission_interval());
    }
    if (m_mirror.stored) {
      for (const auto* list : {&m_mirror.stored->limits, &m_mirror.stored->remembered}) {
        for (const core::LimitState& s : *list) {
          reach = std::max(reach, s.limit.rate.period + cost * s.limit.rate.emission_interval());
        }
      }
    }
    const core::Nanos latest = core::k_max_time / k_micro - reach;
    const core::Nanos longest = core::k_rescale_saturation / k_micro;
    auto time = [&](core::Nanos t) { return t >= core::k_min_time / k_micro && t <= latest; };
    auto duration = [&](core::Nanos d) { return d > -longest && d < longest; };
    bool within = time(decision.now) && time(decision.now + decision.wait) &&
                  time(decision.grant.at) && time(decision.paused_until) &&
                  duration(decision.wait) && duration(decision.reset_after);
    for (const core::LimitReport& limit : decision.limits) {
      within = within && duration(limit.reset_after) && duration(limit.retry_after);
    }
    if (m_mirror.stored) {
      const core::KeyState& state = *m_mirror.stored;
      const std::array<core::SlotKind, 3>& kinds = core::info(state.algorithm).slots;
      within = within && time(state.clock) && time(state.paused_until);
      for (const auto* list : {&state.limits, &state.remembered}) {
        for (const core::LimitState& limit : *list) {
          for (std::size_t i = 0; i < kinds.size(); ++i) {
            if (kinds[i] == core::SlotKind::time) {
              within = within && time(limit.slots[i]) && limit.slots[i] - state.clock < longest;
            }
          }
        }
      }
    }
    m_left_model = !within;
    return within;
  }

  // Reports a difference at the current step; always false.
  bool differ(const std::string& what, const std::string& core_side,
              const std::string& store_side) {
    const Step& step = m_scenario->steps[m_step];
    std::string request;
    if (step.op == Op::decide) {
      request =
          call_in_words(step, m_scenario->limits(step.limit_set, step.algorithm, step.chosen));
    } else if (step.op == Op::pause) {
      request = "pause for " + seconds(step.duration);
    } else if (step.op == Op::give_back) {
      request = "give back";
    } else {
      request = "status";
    }
    FAIL_CHECK(fmt::format(
        "the {} store and the core differ, seed {}, step {} of {} ({} key, first algorithm {}):\n"
        "  at {} ({} ns since the epoch; the clock {} {}): {}\n"
        "  core:  {}\n  {}: {}\n  first difference: {}\n"
        "  again: RATELIMIT_DIFFERENTIAL_SEED={} RATELIMIT_DIFFERENTIAL_SECONDS=0 "
        "RATELIMIT_DIFFERENTIAL_LENGTH={} build/tests/unit_tests -tc='*differential*'",
        m_side, m_scenario->seed, m_step + 1, m_scenario->steps.size(), m_key,
        core::algorithm_name(m_scenario->algorithm), after(m_now, m_scenario->start), m_now,
        step.advance < 0 ? "stepped back by" : "moved on by", seconds(std::abs(step.advance)),
        request, core_side, m_side, store_side, what, m_scenario->seed, m_scenario->steps.size()));
    return false;
  }

  bool decide(const Step& step, Counts& counts) {
    std::vector<core::Limit> limits =
        m_scenario->limits(step.limit_set, step.algorithm, step.chosen);
    core::Request request = step.request;
    request.now = m_now;
    core::Request core_request = request;
    core_request.now = time_for_core(m_now);
    if (m_micros && request.max_wait != std::numeric_limits<core::Nanos>::max()) {
      core_request.max_wait = request.max_wait / k_micro;
    }
    std::vector<core::Limit> core_limits = limits_for_core(limits);
    bool stored_before = m_mirror.stored && !m_mirror.stored->limits.empty();
    core::Algorithm before = stored_before ? m_mirror.stored->algorithm : step.algorithm;
    core::KeyOutcome expected =
        m_mirror.decide({step.algorithm, step.chosen, core_limits, core_request});
    if (!within_model(expected.decision, core_limits, core_request.cost)) {
      return true;
    }
    std::optional<core::Decision> actual;
    std::string conflict;
    try {
      actual = m_store.decide(m_key, step.algorithm, step.chosen, limits, request);
    } catch (const store::KeyConflict& error) {
      conflict = error.what();
    }
    if (expected.conflict) {
      ++counts.conflicts;
      if (actual) {
        return differ(
            "a conflict against a decision",
            fmt::format("conflict with the key's {}", core::algorithm_name(*expected.conflict)),
            decision_in_words(*actual, m_scenario->start));
      }
      return true;
    }
    core::Decision wanted = decision_from_core(expected.decision);
    if (!actual) {
      return differ("a decision against a conflict", decision_in_words(wanted, m_scenario->start),
                    conflict);
    }
    if (std::string difference = first_difference(wanted, *actual); !difference.empty()) {
      return differ(difference, decision_in_words(wanted, m_scenario->start),
                    decision_in_words(*actual, m_scenario->start));
    }
    ++(wanted.allowed ? counts.granted : counts.denied);
    counts.too_far += wanted.refusal == core::Refusal::too_far;
    counts.paused += wanted.paused_until != 0;
    counts.taken_over += stored_before && before != wanted.algorithm && step.chosen;
    if (wanted.allowed) {
      m_grants.push_back({wanted.algorithm, limits, expected.decision.grant, actual->grant});
    }
    return true;
  }

  void give_back(const Step& step, Counts& counts) {
    if (m_grants.empty()) {
      return;
    }
    Granted& granted = m_grants[step.grant % m_grants.size()];
    if (granted.given_back) {
      return; // each grant once, as its waiter gives it back
    }
    granted.given_back = true;
    m_mirror.give_back(granted.algorithm, limits_for_core(granted.limits), granted.core,
                       time_for_core(m_now));
    m_store.give_back(m_key, granted.algorithm, granted.limits, granted.store);
    ++counts.given_back;
    // Limits carried to those of the grant may reach as far as a decision's.
    within_model(core::Decision{});
  }

  bool pause(const Step& step, Counts& counts) {
    core::KeyOutcome expected =
        m_mirror.pause(time_for_core(m_now), duration_for_core(step.duration));
    if (!within_model(expected.decision)) {
      return true;
    }
    store::PauseStanding actual = m_store.pause(m_key, step.duration);
    ++counts.pauses;
    core::Nanos now = from_core(expected.decision.now);
    core::Nanos until = from_core(expected.decision.paused_until);
    if (now != actual.now || until != actual.paused_until) {
      return differ("the pause", fmt::format("now {}, paused until {}", now, until),
                    fmt::format("now {}, paused until {}", actual.now, actual.paused_until));
    }
    return true;
  }

  // The key as `status` shows it.
  bool same_status(Counts& counts) {
    ++counts.statuses;
    std::vector<std::string> keys{m_key};
    std::vector<store::KeyStatus> actual = m_store.status(keys);
    if (!m_mirror.stored) {
      if (!actual.empty()) {
        return differ("the key's existence", "no key",
                      fmt::format("a key, clock {}", actual.front().state.clock));
      }
      return true;
    }
    if (actual.size() != 1) {
      return differ("the key's existence", "a key", "no key");
    }
    core::KeyState wanted = state_from_core(*m_mirror.stored);
    const core::KeyState& got = actual.front().state;
    auto state_in_words = [](const core::KeyState& state) {
      std::string text = fmt::format("{} clock {} log_period {} paused_until {}",
                                     core::algorithm_name(state.algorithm), state.clock,
                                     state.log_period, state.paused_until);
      for (const auto* list : {&state.limits, &state.remembered}) {
        text += list == &state.limits ? "; limits" : "; remembered";
        for (const core::LimitState& s : *list) {
          text +=
              fmt::format(" [{}/{} burst {}: {} {} {}]", s.limit.rate.count, s.limit.rate.period,
                          s.limit.burst, s.slots[0], s.slots[1], s.slots[2]);
        }
      }
      return text;
    };
    bool same_state = wanted.clock == got.clock && wanted.log_period == got.log_period &&
                      wanted.paused_until == got.paused_until && wanted.limits == got.limits &&
                      wanted.remembered == got.remembered &&
                      (wanted.limits.empty() || wanted.algorithm == got.algorithm);
    if (!same_state) {
      return differ("the stored state", state_in_words(wanted), state_in_words(got));
    }
    core::Decision standing =
        decision_from_core(core::inspect(*m_mirror.stored, m_mirror.log, time_for_core(m_now)));
    if (std::string difference = first_difference(standing, actual.front().standing);
        !difference.empty()) {
      return differ("the standing: " + difference, decision_in_words(standing, m_scenario->start),
                    decision_in_words(actual.front().standing, m_scenario->start));
    }
    return true;
  }

  // A key the store no longer holds was collected (gc, or a decision's collection): the core
  // must find it fresh, and goes on from no key.
  bool follow_collection(Counts& counts) {
    if (!m_collect || !m_mirror.stored) {
      return true;
    }
    std::vector<std::string> keys{m_key};
    if (!m_store.status(keys).empty()) {
      return true;
    }
    if (!m_mirror.fresh(time_for_core(m_now))) {
      return differ("a key collected while it held something", "not fresh", "collected");
    }
    m_mirror = MemoryKey{};
    ++counts.collected;
    return true;
  }

  store::Store& m_store;
  core::Nanos& m_clock;
  bool m_micros;
  const char* m_side;
  std::function<void(std::uint64_t)> m_collect;
  const Scenario* m_scenario = nullptr;
  std::size_t m_step = 0;
  core::Nanos m_now = 0;
  std::string m_key;
  MemoryKey m_mirror;
  std::vector<Granted> m_grants;
  bool m_left_model = false;
};

// Runs the check on `store` for the seeds and time of the environment.
void check_store(store::Store& store, core::Nanos& clock, bool micros, const char* side,
                 std::function<void(std::uint64_t)> collect = nullptr) {
  Settings settings = Settings::from_environment();
  Check check(store, clock, micros, side, std::move(collect));
  Counts counts;
  std::uint64_t runs = for_each_seed(settings, [&](std::uint64_t seed) {
    return check.run(scenario(seed, settings.length), counts);
  });
  MESSAGE(fmt::format("{} store, seeds {} to {}: {}", side, settings.first_seed,
                      settings.first_seed + runs - 1, counts.summary()));
  CHECK(counts.runs + counts.left_model == runs);
}

} // namespace

TEST_CASE("differential: the SQLite store decides as the core, on random scenarios") {
  test::TemporaryDatabase database;
  core::Nanos clock = 0;
  store::sqlite::SqliteStore store(database.path(), 2 * core::k_nanos_per_second,
                                   store::Creation::if_missing, [&clock] { return clock; });
  check_store(store, clock, false, "sqlite", [&](std::uint64_t) { store.collect_garbage(); });
}

TEST_CASE("differential: the Redis store decides as the core, on random scenarios") {
  RATELIMIT_REDIS_SERVER(server);
  core::Nanos clock = 0;
  store::redis::RedisStore store(server->location(), "differential:", 2 * core::k_nanos_per_second,
                                 [&clock] { return clock; });
  check_store(store, clock, true, "redis");
}
