// The differential check of the Redis store on the server's own clock (see
// test_store_differential.cpp for the others): its values expire for real, and the core
// beside it says when they may.
#include "conformance.hpp"
#include "differential.hpp"
#include "redis_server.hpp"
#include "store/redis/redis_keys.hpp"
#include "store/redis/redis_reply.hpp"
#include "store/redis/redis_store.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <thread>

using namespace ratelimit;
using namespace ratelimit::differential;
using conformance::MemoryKey;

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
  RealClockCheck(store::redis::RedisStore& store, store::redis::RedisConnection& probe)
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
    m_base = store::redis::redis_keys_of("differential:", key).front();
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
    store::redis::RedisReply reply = m_probe.run_source(
        "local t = redis.call('TIME') return {t[1], t[2], redis.call('PTTL', KEYS[1])}", keys, {});
    std::int64_t seconds = 0, micros = 0, left = 0;
    REQUIRE((store::redis::reply_integer(reply.at(0), seconds) &&
             store::redis::reply_integer(reply.at(1), micros) &&
             store::redis::reply_integer(reply.at(2), left)));
    return {seconds * core::k_nanos_per_second + micros * k_micro,
            left < 0 ? -1 : left * core::k_nanos_per_milli};
  }

  store::redis::RedisStore& m_store;
  store::redis::RedisConnection& m_probe;
  std::string m_base;
};

} // namespace

TEST_CASE("differential: the Redis store on its own clock, its values expiring for real") {
  RATELIMIT_REDIS_SERVER(server);
  Settings settings = Settings::from_environment();
  store::redis::RedisStore store(server->location(), "differential:", 2 * core::k_nanos_per_second);
  store::redis::RedisConnection probe(server->location(), 2 * core::k_nanos_per_second);
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
