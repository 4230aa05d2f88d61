// The differential check: random scenarios on one key (differential.hpp) through a store and
// through the core's key in memory (core/key_life.hpp), every answer compared. The SQLite
// store reads a fake clock in nanoseconds, as the core does. The Redis store is given an
// explicit clock too and converts, as it always does, nanoseconds to the script's whole
// microseconds and back: the core beside it decides in microseconds, with what that
// conversion makes of the call (now and max_wait rounded down, periods and pauses up), and
// its answers are scaled back. A failure tells the first answer that differs, in words.
// See differential.hpp for the environment that sets the seeds and the length of a run.
#include "conformance.hpp"
#include "core/bounds.hpp"
#include "core/rules.hpp"
#include "differential.hpp"
#include "redis_server.hpp"
#include "store/redis_keys.hpp"
#include "store/redis_reply.hpp"
#include "store/redis_run_slots.hpp"
#include "store/redis_store.hpp"
#include "store/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <map>
#include <set>
#include <thread>

using namespace ratelimit;
using namespace ratelimit::differential;
using conformance::MemoryKey;

namespace {

constexpr core::Nanos k_micro = core::k_nanos_per_micro;

// A decision of the core in microseconds, in nanoseconds: the times and durations the Redis
// store converts (see redis_store.cpp; written again here, so as to check it). The markers
// stay as they are.
core::Decision in_nanos(core::Decision d) {
  for (core::Nanos* t : {&d.now, &d.wait, &d.reset_after, &d.paused_until, &d.grant.at}) {
    *t *= k_micro;
  }
  for (core::LimitReport& limit : d.limits) {
    limit.reset_after *= k_micro;
    limit.retry_after *= k_micro;
  }
  return d;
}

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
  store::SqliteStore store(database.path(), 2 * core::k_nanos_per_second,
                           store::Creation::if_missing, [&clock] { return clock; });
  check_store(store, clock, false, "sqlite", [&](std::uint64_t) { store.collect_garbage(); });
}

TEST_CASE("differential: the Redis store decides as the core, on random scenarios") {
  RATELIMIT_REDIS_SERVER(server);
  core::Nanos clock = 0;
  store::RedisStore store(server->location(), "differential:", 2 * core::k_nanos_per_second,
                          [&clock] { return clock; });
  check_store(store, clock, true, "redis");
}

namespace {

// The Redis store on the server's own clock, against the core in microseconds: its values
// expire for real, when the core says the key is fresh again (a millisecond or two later,
// never earlier). Short limits (milliseconds) and real sleeps between the calls let keys
// expire between them. Before each call a probe reads the server's time and the time left
// to the key's hash; the call's own time, in its answer, then tells whether the key was
// still there. A call too close to the expiry to tell ends the run (the sleeps keep clear
// of it, so only a stalled machine gets there); so does a conflict, whose answer has no
// time, when the key became fresh between the probe and the clock read after it.
class RealClockCheck {
public:
  RealClockCheck(store::RedisStore& store, store::RedisConnection& probe)
      : m_store(store), m_probe(probe) {}

  struct Counts {
    std::uint64_t runs = 0;
    std::uint64_t steps = 0;
    std::uint64_t granted = 0;
    std::uint64_t denied = 0;
    std::uint64_t expired = 0;   // calls that found the key expired, the core finding it fresh
    std::uint64_t kept = 0;      // calls that found it, the core finding it in use
    std::uint64_t too_close = 0; // runs ended at a call too close to tell (see run)
    std::uint64_t pauses = 0;
    std::uint64_t statuses = 0;
    std::uint64_t conflicts = 0;
  };

  bool run(std::uint64_t seed, int length, Counts& counts) {
    std::mt19937_64 random(seed);
    auto uniform = [&](std::int64_t low, std::int64_t high) {
      return std::uniform_int_distribution<std::int64_t>(low, high)(random);
    };
    constexpr core::Nanos k_ms = core::k_nanos_per_milli;
    core::Algorithm first =
        core::k_all_algorithms[uniform(0, std::size(core::k_all_algorithms) - 1)];
    // Three sets of one or two limits of 4 to 80 ms.
    std::vector<std::vector<core::Limit>> sets;
    for (int i = 0; i < 3; ++i) {
      std::vector<core::Limit> limits;
      core::Nanos period = uniform(4, 40) * k_ms + (uniform(0, 3) == 0 ? uniform(1, 999) : 0);
      for (int j = 0; j < uniform(1, 2); ++j) {
        std::int64_t count = uniform(1, 6);
        limits.push_back({{count, period * (j + 1)}, count});
      }
      sets.push_back(limits);
    }
    std::string key = fmt::format("real clock {}", seed);
    m_base = store::redis_keys_of("differential:", key).front();
    std::vector<std::string> keys{key};
    m_store.reset(keys, false);
    MemoryKey mirror;
    core::Nanos last = 0;
    for (int step = 0; step < length; ++step) {
      ++counts.steps;
      // Sleep, keeping clear of the moment the key expires.
      auto [time, left] = probe();
      core::Nanos sleep = uniform(0, 2) == 0 ? 0 : uniform(0, 60) * k_ms;
      if (left >= 0 && std::abs(time + sleep - (time + left)) < 4 * k_ms) {
        sleep = left + 5 * k_ms;
      }
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep));
      std::tie(time, left) = probe();
      std::size_t set = static_cast<std::size_t>(uniform(0, 2));
      std::vector<core::Limit> limits = sets[set];
      std::vector<core::Limit> core_limits = limits;
      for (core::Limit& limit : core_limits) {
        limit.rate.period = core::ceil_div(limit.rate.period, k_micro);
      }
      int op = static_cast<int>(uniform(0, 99));
      // The call's time, from its answer; an answer without one (a conflict, no key) came
      // between the probe and a reading of the clock after it.
      core::Nanos at = 0;
      core::Nanos earliest = 0;
      std::string answer;
      std::optional<core::Decision> decided;
      std::optional<store::PauseStanding> paused;
      std::optional<std::vector<store::KeyStatus>> status;
      core::Algorithm algorithm = uniform(0, 9) < 8 ? first : core::k_all_algorithms[uniform(0, 4)];
      core::Request request{0, 1, uniform(0, 2) == 0, std::numeric_limits<core::Nanos>::max()};
      core::Nanos duration = uniform(0, 30) * k_ms + uniform(0, 999);
      bool conflict = false;
      if (op < 80) {
        try {
          decided = m_store.decide(key, algorithm, true, limits, request);
          at = earliest = decided->now;
        } catch (const store::KeyConflict&) {
          conflict = true;
          earliest = time;
          at = m_store.now();
        }
      } else if (op < 90) {
        paused = m_store.pause(key, duration);
        at = earliest = paused->now;
      } else {
        status = m_store.status(keys);
        earliest = status->empty() ? time : status->front().standing.now;
        at = status->empty() ? m_store.now() : status->front().standing.now;
      }
      // Was the key there at the call? Expiry happens at `time + left`, to the millisecond.
      bool there = left >= 0;
      if (there && earliest >= time + left + 2 * k_ms) {
        there = false;
      } else if (there && at > time + left - 2 * k_ms) {
        ++counts.too_close;
        return true;
      }
      core::Nanos core_at = core::floor_div(at, k_micro);
      core::Nanos core_earliest = core::floor_div(earliest, k_micro);
      if (mirror.stored && !there) {
        // Expired: never before the core finds the key fresh.
        if (!mirror.fresh(core_earliest)) {
          FAIL_CHECK(fmt::format("seed {} step {}: the key expired at {} while the core holds it "
                                 "in use",
                                 seed, step + 1, at));
          return false;
        }
        mirror = MemoryKey{};
        ++counts.expired;
      } else if (mirror.stored && there) {
        // Still there: not a few milliseconds after the core finds it fresh.
        if (mirror.fresh(core_earliest - 3 * core::k_nanos_per_milli / k_micro)) {
          FAIL_CHECK(fmt::format("seed {} step {}: the key was still there at {}, though fresh "
                                 "since before {}",
                                 seed, step + 1, at, at - 3 * k_ms));
          return false;
        }
        ++counts.kept;
      } else if (!mirror.stored && there) {
        FAIL_CHECK(fmt::format("seed {} step {}: the store holds a key the core does not", seed,
                               step + 1));
        return false;
      }
      // The core, at the call's time.
      std::string difference;
      if (op < 80 && conflict) {
        // Refused whenever in [earliest, at] the core would have refused; too close to tell
        // when it would have at one end only.
        MemoryKey at_earliest = mirror;
        request.now = core_earliest;
        bool refused_earliest =
            at_earliest.decide({algorithm, true, core_limits, request}).conflict.has_value();
        request.now = core_at;
        if (mirror.decide({algorithm, true, core_limits, request}).conflict.has_value() !=
            refused_earliest) {
          ++counts.too_close;
          return true;
        }
        ++counts.conflicts;
        if (!refused_earliest) {
          difference = "a conflict on the store's side only";
        }
      } else if (op < 80) {
        request.now = core_at;
        core::KeyOutcome expected = mirror.decide({algorithm, true, core_limits, request});
        if (expected.conflict) {
          ++counts.conflicts;
          difference = "a conflict on the core's side only";
        } else {
          core::Decision wanted = in_nanos(expected.decision);
          difference = first_difference(wanted, *decided);
          if (!difference.empty()) {
            difference += "\n  core:  " + decision_in_words(wanted, last) +
                          "\n  redis: " + decision_in_words(*decided, last);
          }
          ++(wanted.allowed ? counts.granted : counts.denied);
        }
      } else if (op < 90) {
        ++counts.pauses;
        core::KeyOutcome expected = mirror.pause(core_at, core::ceil_div(duration, k_micro));
        if (expected.decision.now * k_micro != paused->now ||
            expected.decision.paused_until * k_micro != paused->paused_until) {
          difference = fmt::format("the pause: core until {}, redis until {}",
                                   expected.decision.paused_until * k_micro, paused->paused_until);
        }
      } else {
        ++counts.statuses;
        if (status->empty() != !mirror.stored) {
          difference = "whether the key is there";
        } else if (mirror.stored) {
          core::Decision standing = in_nanos(core::inspect(*mirror.stored, mirror.log, core_at));
          difference = first_difference(standing, status->front().standing);
        }
      }
      if (!difference.empty()) {
        FAIL_CHECK(fmt::format("the redis store (its own clock) and the core differ, seed {}, "
                               "step {}, at {} ({}): {}",
                               seed, step + 1, at,
                               op < 80   ? "decide"
                               : op < 90 ? "pause"
                                         : "status",
                               difference));
        return false;
      }
      last = at;
    }
    m_store.reset(keys, false);
    ++counts.runs;
    return true;
  }

private:
  // The server's time and the time left to the key's hash (negative: none), in nanoseconds,
  // read at once.
  std::pair<core::Nanos, core::Nanos> probe() {
    std::string keys[] = {m_base};
    store::RedisReply reply = m_probe.run_source(
        "local t = redis.call('TIME') return {t[1], t[2], redis.call('PTTL', KEYS[1])}", keys, {});
    std::int64_t seconds = 0, micros = 0, left = 0;
    REQUIRE((store::reply_integer(reply.at(0), seconds) &&
             store::reply_integer(reply.at(1), micros) && store::reply_integer(reply.at(2), left)));
    return {seconds * core::k_nanos_per_second + micros * k_micro,
            left < 0 ? -1 : left * core::k_nanos_per_milli};
  }

  store::RedisStore& m_store;
  store::RedisConnection& m_probe;
  std::string m_base;
};

} // namespace

TEST_CASE("differential: the Redis store on its own clock, its values expiring for real") {
  RATELIMIT_REDIS_SERVER(server);
  Settings settings = Settings::from_environment();
  store::RedisStore store(server->location(), "differential:", 2 * core::k_nanos_per_second);
  store::RedisConnection probe(server->location(), 2 * core::k_nanos_per_second);
  RealClockCheck check(store, probe);
  RealClockCheck::Counts counts;
  // Its steps sleep: a tenth of the length, for the same time.
  std::uint64_t runs = for_each_seed(settings, [&](std::uint64_t seed) {
    return check.run(seed, std::max(10, settings.length / 10), counts);
  });
  MESSAGE(
      fmt::format("redis store on its own clock, seeds {} to {}: {} runs, {} steps: {} granted, "
                  "{} denied, {} conflicts, {} pauses, {} statuses; {} calls found the key "
                  "expired, {} found it still there; {} runs ended at a call too close to "
                  "an expiry, or to the key's becoming fresh, to tell",
                  settings.first_seed, settings.first_seed + runs - 1, counts.runs, counts.steps,
                  counts.granted, counts.denied, counts.conflicts, counts.pauses, counts.statuses,
                  counts.expired, counts.kept, counts.too_close));
  CHECK(counts.runs + counts.too_close == runs);
}

namespace {

// What run_slots.lua must answer, with core::admit_run deciding: the script's queue of
// tickets, its leases and the rows it forgets, kept here in microseconds as it keeps them.
class RunSlotsModel {
public:
  struct Answer {
    bool started = false;
    bool behind = false;
    core::RunAdmission admission;
    std::int64_t ticket = 0;
  };

  // The key's pause, as `pause` set it.
  core::Nanos paused_until = 0;

  Answer attempt(std::int64_t ticket, std::int64_t cost, core::Nanos hold, core::Nanos lease,
                 const std::vector<core::RunCap>& caps, core::Nanos now) {
    expire_dead(now);
    if (ticket == 0 || m_rows.count(ticket) == 0) {
      // New, or forgotten (dead) while it waited: it comes again, last.
      ticket = ++m_next == 1 ? now : m_next;
      m_next = ticket;
      m_rows[ticket] = {cost, hold, std::nullopt, std::nullopt};
      m_queue.insert(ticket);
    }
    m_leases[ticket] = now + lease;
    Answer answer;
    answer.ticket = ticket;
    if (*m_queue.begin() != ticket) {
      answer.behind = true;
      return answer;
    }
    if (paused_until > now) {
      // The caps are asked again at the pause's end: no holder is looked at before.
      answer.admission = core::admit_run({}, caps, cost, now, paused_until);
      return answer;
    }
    core::Nanos longest = 0;
    for (const core::RunCap& cap : caps) {
      longest = std::max(longest, cap.hold);
    }
    std::vector<core::RunHolder> holders;
    for (auto it = m_rows.begin(); it != m_rows.end();) {
      const Row& row = it->second;
      if (it->first != ticket && row.ended &&
          core::run_released({row.cost, *row.started, row.ended}, std::max(row.hold, longest),
                             now)) {
        it = m_rows.erase(it);
        continue;
      }
      if (it->first != ticket && row.started) {
        holders.push_back({row.cost, *row.started, row.ended});
      }
      ++it;
    }
    answer.admission = core::admit_run(holders, caps, cost, now);
    if (answer.admission.admission == core::Admission::now) {
      m_rows[ticket].started = now;
      m_queue.erase(ticket);
      answer.started = true;
    }
    return answer;
  }

  void finish(std::int64_t ticket, core::Nanos now, bool leaving) {
    expire_dead(now);
    if (auto it = m_rows.find(ticket); it != m_rows.end()) {
      if (leaving || !it->second.started || it->second.hold == 0) {
        m_rows.erase(it);
      } else {
        it->second.ended = now;
      }
    }
    m_leases.erase(ticket);
    m_queue.erase(ticket);
  }

  void renew(std::int64_t ticket, core::Nanos lease, core::Nanos now) {
    if (auto it = m_leases.find(ticket); it != m_leases.end()) {
      it->second = now + lease;
    }
  }

private:
  struct Row {
    std::int64_t cost;
    core::Nanos hold;
    std::optional<core::Nanos> started;
    std::optional<core::Nanos> ended;
  };

  // Commands whose lease ran out are dead: a waiter leaves, a holder counts as ended now.
  void expire_dead(core::Nanos now) {
    for (auto it = m_leases.begin(); it != m_leases.end();) {
      if (it->second >= now) {
        ++it;
        continue;
      }
      if (auto row = m_rows.find(it->first); row != m_rows.end()) {
        if (!row->second.started || row->second.hold == 0) {
          m_rows.erase(row);
        } else if (!row->second.ended) {
          row->second.ended = now;
        }
      }
      m_queue.erase(it->first);
      it = m_leases.erase(it);
    }
  }

  std::map<std::int64_t, Row> m_rows;
  std::map<std::int64_t, core::Nanos> m_leases;
  std::set<std::int64_t> m_queue;
  std::int64_t m_next = 0;
};

} // namespace

TEST_CASE("differential: run_slots.lua admits as core::admit_run, on an explicit clock, paused "
          "or not") {
  RATELIMIT_REDIS_SERVER(server);
  Settings settings = Settings::from_environment();
  core::Nanos clock = 0;
  store::RedisStore store(server->location(), "differential:", 2 * core::k_nanos_per_second,
                          [&clock] { return clock; });
  constexpr core::Nanos k_ms = core::k_nanos_per_milli;
  auto micros_up = [](core::Nanos d) { return core::ceil_div(d, k_micro); };
  std::uint64_t attempts = 0, started = 0, behind = 0, at = 0, on_exit = 0, dead = 0, steps = 0;
  std::uint64_t pauses = 0, held_by_pause = 0;
  std::uint64_t completed = 0;
  std::uint64_t runs = for_each_seed(settings, [&](std::uint64_t seed) {
    std::mt19937_64 random(seed);
    auto uniform = [&](std::int64_t low, std::int64_t high) {
      return std::uniform_int_distribution<std::int64_t>(low, high)(random);
    };
    std::string key = fmt::format("run slots {}", seed);
    std::vector<std::string> keys{key};
    store.reset(keys, false);
    struct Command {
      std::unique_ptr<store::RunSlots> slots;
      std::int64_t cost = 1;
      core::Nanos hold = 0;
      core::Nanos lease = 0;
      std::vector<core::RunCap> caps;
      std::int64_t ticket = 0;
      bool running = false;
      core::Nanos renewed = 0;
    };
    std::vector<Command> live;
    RunSlotsModel model;
    clock = 1'700'000'000 * core::k_nanos_per_second + uniform(0, 999'999'999);
    // Everyone on the key shares its caps most of the time, as with one command line.
    std::vector<core::RunCap> shared{{uniform(1, 3), uniform(0, 1) * uniform(1, 500) * k_ms}};
    auto compare = [&](Command& command, const store::StartAnswer& answer,
                       const RunSlotsModel::Answer& expected, const char* what) {
      ++attempts;
      core::Nanos now = core::floor_div(clock, k_micro);
      bool same = answer.started == expected.started && answer.behind == expected.behind &&
                  answer.now == now * k_micro;
      if (same && !answer.started && !answer.behind) {
        same = answer.admission.admission == expected.admission.admission &&
               answer.admission.binding == expected.admission.binding &&
               answer.admission.paused_until == expected.admission.paused_until * k_micro &&
               (answer.admission.admission != core::Admission::at ||
                answer.admission.at == expected.admission.at * k_micro);
      }
      if (!same) {
        FAIL_CHECK(fmt::format(
            "run_slots.lua and core::admit_run differ, seed {}, step {}: {} of cost {} under {} "
            "cap(s), first {} per {}, at {}:\n  core:   started {}, behind {}, admission {} at "
            "{} (cap {})\n  script: started {}, behind {}, admission {} at {} (cap {}), now {}",
            seed, steps, what, command.cost, command.caps.size(), command.caps[0].count,
            seconds(command.caps[0].hold), clock, expected.started, expected.behind,
            static_cast<int>(expected.admission.admission), expected.admission.at * k_micro,
            expected.admission.binding, answer.started, answer.behind,
            static_cast<int>(answer.admission.admission), answer.admission.at,
            answer.admission.binding, answer.now));
        return false;
      }
      command.ticket = expected.ticket;
      command.running = answer.started;
      started += answer.started;
      behind += answer.behind;
      at += !answer.started && !answer.behind && answer.admission.admission == core::Admission::at;
      held_by_pause += answer.admission.paused_until != 0;
      on_exit += !answer.started && !answer.behind &&
                 answer.admission.admission == core::Admission::on_exit;
      return true;
    };
    for (int step = 0; step < settings.length; ++step) {
      ++steps;
      int advance = static_cast<int>(uniform(0, 9));
      clock += advance < 3   ? 0
               : advance < 8 ? uniform(0, 200) * k_ms + uniform(0, 999'999)
                             : uniform(300, 1500) * k_ms;
      core::Nanos now = core::floor_div(clock, k_micro);
      int op = static_cast<int>(uniform(0, 99));
      std::vector<std::size_t> waiting, running;
      for (std::size_t i = 0; i < live.size(); ++i) {
        (live[i].running ? running : waiting).push_back(i);
      }
      if (op < 25 && live.size() < 6) {
        Command command;
        command.caps =
            uniform(0, 3) == 0
                ? std::vector<core::RunCap>{{uniform(1, 3), uniform(0, 1) * uniform(1, 500) * k_ms}}
                : shared;
        if (uniform(0, 3) == 0) {
          command.caps.push_back({uniform(2, 5), uniform(200, 900) * k_ms});
        }
        command.cost = 1;
        for (const core::RunCap& cap : command.caps) {
          command.hold = std::max(command.hold, cap.hold);
        }
        command.cost = uniform(1, command.caps[0].count);
        for (const core::RunCap& cap : command.caps) {
          command.cost = std::min(command.cost, cap.count);
        }
        command.lease = uniform(300, 1000) * k_ms;
        command.slots = store.run_slots(command.lease);
        std::vector<core::RunCap> caps_us = command.caps;
        for (core::RunCap& cap : caps_us) {
          cap.hold = micros_up(cap.hold);
        }
        store::StartAnswer answer =
            command.slots->join(key, command.cost, command.hold, command.caps);
        RunSlotsModel::Answer expected = model.attempt(0, command.cost, micros_up(command.hold),
                                                       micros_up(command.lease), caps_us, now);
        if (!compare(command, answer, expected, "join")) {
          return false;
        }
        live.push_back(std::move(command));
      } else if (op < 55 && !waiting.empty()) {
        Command& command = live[waiting[static_cast<std::size_t>(uniform(0, waiting.size() - 1))]];
        std::vector<core::RunCap> caps_us = command.caps;
        for (core::RunCap& cap : caps_us) {
          cap.hold = micros_up(cap.hold);
        }
        store::StartAnswer answer = command.slots->try_start(command.caps);
        RunSlotsModel::Answer expected =
            model.attempt(command.ticket, command.cost, micros_up(command.hold),
                          micros_up(command.lease), caps_us, now);
        if (!compare(command, answer, expected, "try_start")) {
          return false;
        }
      } else if (op < 70 && !running.empty()) {
        std::size_t index = running[static_cast<std::size_t>(uniform(0, running.size() - 1))];
        live[index].slots->finish();
        model.finish(live[index].ticket, now, false);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      } else if (op < 78 && !waiting.empty()) {
        std::size_t index = waiting[static_cast<std::size_t>(uniform(0, waiting.size() - 1))];
        live[index].slots->leave();
        model.finish(live[index].ticket, now, true);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      } else if (op < 90 && !live.empty()) {
        Command& command = live[static_cast<std::size_t>(uniform(0, live.size() - 1))];
        command.slots->renew();
        model.renew(command.ticket, micros_up(command.lease), now);
      } else if (op >= 90 && op < 94) {
        // A pause of the key (`ratelimit pause`, a server's answer): no start before its end.
        store::PauseStanding standing = store.pause(key, uniform(0, 800) * k_ms + uniform(0, 999));
        model.paused_until = standing.paused_until / k_micro;
        ++pauses;
      } else if (op >= 94 && !live.empty() && uniform(0, 2) == 0) {
        // A command that dies: it renews no more, and nobody hears from it again.
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(uniform(0, live.size() - 1)));
        ++dead;
      }
    }
    store.reset(keys, false);
    ++completed;
    return true;
  });
  MESSAGE(fmt::format("run slots, seeds {} to {}: {} runs, {} steps, {} attempts: {} started, {} "
                      "behind a waiter, {} to start at a release or a pause's end ({} held by "
                      "one of {} pauses), {} on a holder's exit; {} commands died",
                      settings.first_seed, settings.first_seed + runs - 1, completed, steps,
                      attempts, started, behind, at, held_by_pause, pauses, on_exit, dead));
  CHECK(completed == runs);
}
