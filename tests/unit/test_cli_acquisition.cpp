// The acquisition loop of wait, run and pipe on a virtual clock: a key decided by the core,
// which the test pauses, fails or interrupts at chosen instants of the waiter's sleep.
#include "cli/acquisition.hpp"

#include "core_test_key.hpp"
#include "store/store.hpp"

#include <doctest/doctest.h>
#include <functional>
#include <map>

using namespace ratelimit;
using namespace ratelimit::core::testing;
using core::Algorithm;
using core::Decision;
using core::Nanos;

namespace {

// One clock for the key and the waiter, and what happens to the key while the waiter sleeps.
class VirtualClock final : public cli::Sleeper {
public:
  Nanos time = k_t0;
  // Run when a sleep reaches their instant; one that returns a code other than 0 ends the
  // sleep there with that code (a signal).
  std::multimap<Nanos, std::function<int()>> events;
  std::vector<Nanos> sleeps;

  Nanos now() override { return time; }
  int sleep(Nanos duration) override {
    sleeps.push_back(duration);
    Nanos end = time + duration;
    while (!events.empty() && events.begin()->first <= end) {
      auto event = events.extract(events.begin());
      time = std::max(time, event.key());
      if (int code = event.mapped()()) {
        return code;
      }
    }
    time = end;
    return 0;
  }
};

// A key of the core on the virtual clock, shared as a store's key is: it can be paused, and
// the check for a pause can fail as a store out of reach fails.
class VirtualKey final : public cli::Gate {
public:
  VirtualKey(VirtualClock& clock, Algorithm algorithm, std::vector<core::Limit> limits)
      : m_clock(clock), m_limits(std::move(limits)) {
    m_state.algorithm = algorithm;
  }

  bool check_fails = false;
  int decisions = 0;
  int given_back = 0;
  int pause_checks = 0;
  int closes = 0;

  Decision decide(core::Request request) override {
    ++decisions;
    request.now = m_clock.time;
    return core::decide(m_state, m_limits, m_log, request);
  }
  void give_back(const core::Grant& grant) override {
    ++given_back;
    core::give_back(m_state, m_limits, m_log, m_clock.time, grant);
  }
  bool shared() const override { return true; }
  bool paused(const core::Grant&) override {
    ++pause_checks;
    if (check_fails) {
      throw store::StoreUnavailable("redis 127.0.0.1:6379: cannot connect: connection refused");
    }
    return m_state.paused_until > m_clock.time;
  }
  void close_while_sleeping() override { ++closes; }

  // `ratelimit pause KEY duration` now.
  Nanos pause(Nanos duration) { return core::pause(m_state, m_clock.time, duration); }
  // A `try` now by another process.
  Decision attempt(std::int64_t cost = 1) {
    core::Request request;
    request.now = m_clock.time;
    request.cost = cost;
    return core::decide(m_state, m_limits, m_log, request);
  }

private:
  VirtualClock& m_clock;
  std::vector<core::Limit> m_limits;
  core::KeyState m_state;
  core::MemoryGrantLog m_log;
};

cli::SlotAsk reserve_within(Nanos max_wait = std::numeric_limits<Nanos>::max()) {
  cli::SlotAsk ask;
  ask.max_wait = max_wait;
  return ask;
}

// Runs `event` at `time`, going on with the sleep.
void at(VirtualClock& clock, Nanos time, std::function<void()> event) {
  clock.events.emplace(time, [event = std::move(event)] {
    event();
    return 0;
  });
}

} // namespace

TEST_CASE("cli::acquire_slot: a slot free now is granted without sleeping or asking for a "
          "pause") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::token_bucket, {limit_of(2, k_s)});
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
  CHECK(acquired.decision.allowed);
  CHECK(acquired.waited == 0);
  CHECK(clock.sleeps.empty());
  CHECK(key.pause_checks == 0);
  CHECK(key.decisions == 1);
}

TEST_CASE("cli::acquire_slot sleeps until the slot reserved, and counts the sleep") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::sliding_log, {limit_of(1, 10 * k_s)});
  REQUIRE(key.attempt().allowed);
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
  CHECK(acquired.decision.allowed);
  CHECK(acquired.decision.grant.at == k_t0 + 10 * k_s);
  CHECK(clock.time == k_t0 + 10 * k_s);
  CHECK(acquired.waited == 10 * k_s);
  CHECK(key.pause_checks == 1);
  CHECK(key.given_back == 0);
  // A sleep of a second or more closes the store's connection first.
  CHECK(key.closes == 1);
}

TEST_CASE("cli::acquire_slot keeps the store's connection over a sleep under a second") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::token_bucket, {limit_of(2, k_s, 1)});
  REQUIRE(key.attempt().allowed);
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
  CHECK(acquired.waited == 500 * k_ms);
  CHECK(key.closes == 0);
}

// What the suites tested by sleeping 20 s: a waiter asleep until its slot when a pause
// begins goes after the pause, on every algorithm, and its waited time counts both sleeps.
TEST_CASE("cli::acquire_slot: a waiter asleep when a pause begins goes after it, on every "
          "algorithm") {
  for (Algorithm algorithm : core::k_all_algorithms) {
    CAPTURE(core::algorithm_name(algorithm));
    VirtualClock clock;
    VirtualKey key(clock, algorithm, {limit_of(1, 10 * k_s)});
    REQUIRE(key.attempt().allowed);
    Nanos paused_until = 0;
    // Longer than any algorithm's slot is away (a sliding window's is at 20 s).
    at(clock, k_t0 + k_s, [&] { paused_until = key.pause(30 * k_s); });
    cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
    REQUIRE(acquired.decision.allowed);
    CHECK(paused_until == k_t0 + 31 * k_s);
    // Woken at its slot, it found the pause, gave the slot back and slept again.
    REQUIRE(clock.sleeps.size() == 2);
    CHECK(clock.sleeps[0] >= 10 * k_s);
    CHECK(key.given_back == 1);
    CHECK(key.pause_checks == 2);
    CHECK(acquired.decision.grant.at >= paused_until);
    CHECK(clock.time == acquired.decision.grant.at);
    CHECK(acquired.waited == clock.time - k_t0);
    CHECK(acquired.pause_unchecked.empty());
  }
}

TEST_CASE("cli::acquire_slot: after a pause the slot is placed by the limits, not at its end") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::token_bucket, {limit_of(1, k_s, 1)});
  REQUIRE(key.attempt().allowed);
  // Another waiter took the slot at the pause's end while this one slept.
  at(clock, k_t0 + 100 * k_ms, [&] {
    key.pause(5 * k_s);
    core::Request other;
    other.now = clock.time;
    other.reserve = true;
    REQUIRE(key.decide(other).grant.at == k_t0 + 5100 * k_ms);
  });
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
  REQUIRE(acquired.decision.allowed);
  // Its own slot (1 s) went back; the next one is a second after the other waiter's.
  CHECK(acquired.decision.grant.at == k_t0 + 6100 * k_ms);
}

TEST_CASE("cli::acquire_slot: the sleep before a pause counts against --timeout") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::sliding_log, {limit_of(1, 10 * k_s)});
  REQUIRE(key.attempt().allowed);
  at(clock, k_t0 + k_s, [&] { key.pause(20 * k_s); });
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within(15 * k_s));
  // Woken at 10 s with 5 s left, the slot after the pause (21 s) is beyond it.
  CHECK_FALSE(acquired.decision.allowed);
  CHECK(acquired.decision.refusal == core::Refusal::timeout);
  CHECK(acquired.waited == 10 * k_s);
  CHECK(key.given_back == 1);
  // Nothing stays reserved: a try at the pause's end is granted.
  clock.time = k_t0 + 21 * k_s;
  CHECK(key.attempt().allowed);
}

TEST_CASE("cli::acquire_slot: a slot the store granted goes ahead when the pause cannot be "
          "checked") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::sliding_log, {limit_of(1, 10 * k_s)});
  REQUIRE(key.attempt().allowed);
  // The store stops answering while the waiter sleeps; a pause may even have begun.
  at(clock, k_t0 + k_s, [&] {
    key.pause(20 * k_s);
    key.check_fails = true;
  });
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
  CHECK(acquired.decision.allowed);
  CHECK(acquired.interrupted == 0);
  CHECK(acquired.waited == 10 * k_s);
  CHECK(key.given_back == 0);
  CHECK(acquired.pause_unchecked == "redis 127.0.0.1:6379: cannot connect: connection refused");
}

TEST_CASE("cli::acquire_slot: a signal in the sleep gives the reservation back") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::token_bucket, {limit_of(1, k_s, 1)});
  REQUIRE(key.attempt().allowed);
  clock.events.emplace(k_t0 + 300 * k_ms, [] { return 15; });
  cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within());
  CHECK(acquired.interrupted == 15);
  CHECK(acquired.waited == 300 * k_ms);
  CHECK(key.given_back == 1);
  CHECK(key.pause_checks == 0);
  // The slot is free again for the next waiter.
  core::Request next;
  next.now = clock.time;
  next.reserve = true;
  CHECK(key.decide(next).grant.at == k_t0 + k_s);
}

// `pipe` reserves the records that fall due with a waiting one together with it.
TEST_CASE("cli::acquire_slot gives back what was reserved with the slot, the latest first") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::sliding_log, {limit_of(3, 300 * k_ms)});
  REQUIRE(key.attempt(3).allowed);
  int batches = 0;
  cli::ReserveMore reserve_more = [&](Nanos first_wait, Nanos max_wait) {
    ++batches;
    core::Request request;
    request.now = clock.time;
    request.cost = 2;
    request.reserve = true;
    request.max_wait = std::min(max_wait, first_wait + 300 * k_ms);
    Decision more = key.decide(request);
    return more.allowed ? std::optional(more) : std::nullopt;
  };
  SUBCASE("a pause") {
    at(clock, k_t0 + 10 * k_ms, [&] { key.pause(2 * k_s); });
    cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within(), reserve_more);
    REQUIRE(acquired.decision.allowed);
    REQUIRE(acquired.more);
    CHECK(batches == 2);
    CHECK(key.given_back == 2);
    CHECK(acquired.decision.grant.at >= k_t0 + 2010 * k_ms);
    CHECK(acquired.more->grant.at >= acquired.decision.grant.at);
    // Woken for the last of them.
    CHECK(clock.time == acquired.more->grant.at);
  }
  SUBCASE("a signal") {
    clock.events.emplace(k_t0 + 50 * k_ms, [] { return 2; });
    cli::Acquisition acquired = cli::acquire_slot(key, clock, reserve_within(), reserve_more);
    CHECK(acquired.interrupted == 2);
    CHECK_FALSE(acquired.more);
    CHECK(key.given_back == 2);
    // Both went back: the key is as it was after the first grant, full until 300 ms.
    core::Request next;
    next.now = clock.time;
    next.reserve = true;
    next.cost = 3;
    CHECK(key.decide(next).grant.at == k_t0 + 300 * k_ms);
  }
}

TEST_CASE("cli::acquire_slot: a full leaky-bucket queue refuses a waiter, or `pipe` asks again "
          "when it takes requests") {
  VirtualClock clock;
  // A queue of one: a grant of 2 leaves it full for 200 ms.
  VirtualKey key(clock, Algorithm::leaky_bucket, {limit_of(5, k_s, 1)});
  REQUIRE(key.attempt(2).allowed);
  cli::SlotAsk ask = reserve_within(k_s);
  cli::Acquisition refused = cli::acquire_slot(key, clock, ask);
  CHECK_FALSE(refused.decision.allowed);
  CHECK(refused.decision.refusal == core::Refusal::full);
  CHECK(clock.sleeps.empty());
  ask.ask_again_after_refusal = true;
  cli::Acquisition granted = cli::acquire_slot(key, clock, ask);
  CHECK(granted.decision.allowed);
  REQUIRE_FALSE(clock.sleeps.empty());
  CHECK(clock.sleeps[0] == refused.decision.wait);
  CHECK(key.decisions == 3);
  // Beyond --timeout the refusal stands.
  ask.max_wait = 100 * k_ms;
  clock.time = k_t0 + 10 * k_s;
  REQUIRE(key.attempt(2).allowed);
  CHECK_FALSE(cli::acquire_slot(key, clock, ask).decision.allowed);
}

TEST_CASE("cli::acquire_slot: try and --no-wait decide once") {
  VirtualClock clock;
  VirtualKey key(clock, Algorithm::token_bucket, {limit_of(1, k_s, 1)});
  cli::SlotAsk now;
  now.reserve = false;
  CHECK(cli::acquire_slot(key, clock, now).decision.allowed);
  cli::Acquisition refused = cli::acquire_slot(key, clock, now);
  CHECK_FALSE(refused.decision.allowed);
  CHECK(refused.decision.refusal == core::Refusal::later);
  CHECK(clock.sleeps.empty());
  CHECK(key.decisions == 2);
}

namespace {

// The run slots of one key on the virtual clock: holders that exit at chosen instants, and a
// pause; a wait for a change ends at the next exit.
class VirtualQueue final : public cli::RunSlotQueue {
public:
  VirtualQueue(VirtualClock& clock, std::vector<core::RunCap> caps)
      : m_clock(clock), m_caps(std::move(caps)) {}

  std::vector<core::RunHolder> holders;
  // When each running holder exits, by its index.
  std::map<Nanos, std::size_t> exits;
  Nanos paused_until = 0;
  std::optional<Nanos> signal_at;
  int attempts = 0;
  std::vector<Nanos> waits;

  store::StartAnswer attempt() override {
    ++attempts;
    store::StartAnswer answer;
    answer.now = m_clock.time;
    answer.admission = core::admit_run(holders, m_caps, 1, m_clock.time, paused_until);
    answer.started = answer.admission.admission == core::Admission::now;
    return answer;
  }
  int wait_for_change(Nanos timeout) override {
    waits.push_back(timeout);
    Nanos end = timeout == std::numeric_limits<Nanos>::max() ? timeout : m_clock.time + timeout;
    Nanos next_exit = exits.empty() ? std::numeric_limits<Nanos>::max() : exits.begin()->first;
    if (signal_at && *signal_at <= std::min(end, next_exit)) {
      m_clock.time = *signal_at;
      return 15;
    }
    if (next_exit <= end) {
      auto exited = exits.extract(exits.begin());
      m_clock.time = exited.key();
      holders[exited.mapped()].ended = exited.key();
      return 0;
    }
    m_clock.time = end;
    return 0;
  }

private:
  VirtualClock& m_clock;
  std::vector<core::RunCap> m_caps;
};

} // namespace

TEST_CASE("cli::wait_for_run_slot: a waiter blocked by a running holder gives up when "
          "--timeout runs out") {
  VirtualClock clock;
  VirtualQueue queue(clock, {{1, 0}});
  queue.holders.push_back({1, k_t0, std::nullopt});
  cli::RunSlotWait wait = cli::wait_for_run_slot(queue, clock, 500 * k_ms, false);
  CHECK_FALSE(wait.started);
  CHECK(wait.timed_out);
  CHECK(wait.answer.admission.admission == core::Admission::on_exit);
  CHECK(queue.waits == std::vector<Nanos>{500 * k_ms});
  CHECK(clock.time == k_t0 + 500 * k_ms);
}

TEST_CASE("cli::wait_for_run_slot: a known release beyond --timeout is refused at once") {
  VirtualClock clock;
  VirtualQueue queue(clock, {{1, 30 * k_s}});
  queue.holders.push_back({1, k_t0 - k_s, k_t0});
  cli::RunSlotWait wait = cli::wait_for_run_slot(queue, clock, 5 * k_s, false);
  CHECK_FALSE(wait.started);
  CHECK(wait.timed_out);
  CHECK(wait.answer.admission.at == k_t0 + 30 * k_s);
  CHECK(queue.waits.empty());
}

TEST_CASE("cli::wait_for_run_slot starts at a holder's exit, or at a release after it") {
  VirtualClock clock;
  SUBCASE("-j 1: at the exit") {
    VirtualQueue queue(clock, {{1, 0}});
    queue.holders.push_back({1, k_t0, std::nullopt});
    queue.exits.emplace(k_t0 + 2 * k_s, 0);
    cli::RunSlotWait wait =
        cli::wait_for_run_slot(queue, clock, std::numeric_limits<Nanos>::max(), false);
    CHECK(wait.started);
    CHECK(wait.waited == 2 * k_s);
    CHECK(queue.attempts == 2);
  }
  SUBCASE("--until-exit -r 1/1s: a period after the exit") {
    VirtualQueue queue(clock, {{1, k_s}});
    queue.holders.push_back({1, k_t0 - k_s, k_t0});
    cli::RunSlotWait wait = cli::wait_for_run_slot(queue, clock, 5 * k_s, false);
    CHECK(wait.started);
    CHECK(queue.waits == std::vector<Nanos>{k_s});
    CHECK(wait.waited == k_s);
  }
}

TEST_CASE("cli::wait_for_run_slot: a pause holds the start until its end") {
  VirtualClock clock;
  VirtualQueue queue(clock, {{2, 0}});
  queue.paused_until = k_t0 + 3 * k_s;
  SUBCASE("waiting") {
    cli::RunSlotWait wait =
        cli::wait_for_run_slot(queue, clock, std::numeric_limits<Nanos>::max(), false);
    CHECK(wait.started);
    CHECK(wait.waited == 3 * k_s);
    CHECK(queue.waits == std::vector<Nanos>{3 * k_s});
  }
  SUBCASE("--no-wait") {
    cli::RunSlotWait wait = cli::wait_for_run_slot(queue, clock, 0, true);
    CHECK_FALSE(wait.started);
    CHECK_FALSE(wait.timed_out);
    CHECK(wait.answer.admission.paused_until == k_t0 + 3 * k_s);
    CHECK(queue.waits.empty());
  }
  SUBCASE("--timeout shorter than the pause") {
    cli::RunSlotWait wait = cli::wait_for_run_slot(queue, clock, 2 * k_s, false);
    CHECK_FALSE(wait.started);
    CHECK(wait.timed_out);
    CHECK(queue.waits.empty());
  }
}

TEST_CASE("cli::wait_for_run_slot: a signal ends the wait") {
  VirtualClock clock;
  VirtualQueue queue(clock, {{1, 0}});
  queue.holders.push_back({1, k_t0, std::nullopt});
  queue.signal_at = k_t0 + 300 * k_ms;
  cli::RunSlotWait wait =
      cli::wait_for_run_slot(queue, clock, std::numeric_limits<Nanos>::max(), false);
  CHECK_FALSE(wait.started);
  CHECK(wait.interrupted == 15);
  CHECK_FALSE(wait.timed_out);
}
