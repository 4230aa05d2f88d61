// The server budget: what the answers said about the quota, as ceilings on the key's grants,
// on explicit times.
#include "core/bounds.hpp"
#include "core/decide.hpp"
#include "core/server_budget.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>
#include <map>
#include <queue>
#include <random>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// An answer that says `remaining` are left until `reset_after` from its observation.
Observation said(std::int64_t remaining, Nanos reset_after,
                 std::optional<std::int64_t> grant = std::nullopt) {
  Observation observation;
  observation.standings.push_back({remaining, reset_after});
  observation.grant = grant;
  return observation;
}

Request observing(Nanos now, bool reserve = false) {
  Request request;
  request.now = now;
  request.reserve = reserve;
  request.answer_wait = k_answer_wait;
  return request;
}

} // namespace

TEST_CASE("core::decide: a budget of 0 grants nothing until its reset, whatever the limits") {
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  REQUIRE(key.attempt(k_t0).allowed);
  observe(key.state(), k_t0 + 10 * k_ms, said(0, 3 * k_s));
  Decision denied = key.attempt(k_t0 + 20 * k_ms);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.refusal == Refusal::later);
  CHECK(denied.wait == 3 * k_s - 10 * k_ms);
  CHECK(denied.budget_until == k_t0 + 3010 * k_ms);
  CHECK(denied.remaining == 0);
  REQUIRE(denied.budget);
  CHECK(denied.budget->remaining == 0);
  CHECK(denied.budget->reset == k_t0 + 3010 * k_ms);
  // The limit alone would grant, and says so.
  CHECK(denied.limits[0].retry_after == 0);
  // A reservation takes the reset, no polling: the slot is at the reset.
  Decision waiter = key.reserve(k_t0 + 20 * k_ms);
  REQUIRE(waiter.allowed);
  CHECK(waiter.grant.at == k_t0 + 3010 * k_ms);
  CHECK(waiter.budget_until == k_t0 + 3010 * k_ms);
  // At the reset, the limits decide again.
  Decision after = key.attempt(k_t0 + 3010 * k_ms);
  CHECK(after.allowed);
  CHECK_FALSE(after.budget);
}

TEST_CASE("core::decide: a budget grants the remaining count, then holds until the reset") {
  for (Algorithm algorithm :
       {Algorithm::token_bucket, Algorithm::leaky_bucket, Algorithm::fixed_window,
        Algorithm::sliding_window, Algorithm::sliding_log}) {
    CAPTURE(algorithm_name(algorithm));
    TestKey key(algorithm, {limit_of(1000, k_s, algorithm == Algorithm::leaky_bucket ? 1000 : 0)});
    observe(key.state(), k_t0, said(3, 5 * k_s));
    for (int i = 0; i < 3; ++i) {
      Decision granted = key.attempt(k_t0 + i * k_ms);
      REQUIRE(granted.allowed);
      CHECK(granted.remaining <= 2 - i);
      CHECK(granted.grant.seq == i + 1);
    }
    Decision denied = key.attempt(k_t0 + 4 * k_ms);
    CHECK_FALSE(denied.allowed);
    CHECK(denied.wait == 5 * k_s - 4 * k_ms);
    // Nor a cost of 2 while 1 would be left.
    CHECK(key.attempt(k_t0 + 5 * k_s).allowed);
  }
}

TEST_CASE("core::decide: the budget only tightens: the limits still bind under it") {
  TestKey key(Algorithm::sliding_log, {limit_of(2, k_s)});
  observe(key.state(), k_t0, said(100, 60 * k_s));
  CHECK(key.attempt(k_t0).allowed);
  CHECK(key.attempt(k_t0).allowed);
  Decision denied = key.attempt(k_t0);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.budget_until == 0);
  CHECK(denied.wait == k_s);
  REQUIRE(denied.budget);
  CHECK(denied.budget->remaining == 98);
}

TEST_CASE("core::observe: grants still on their way to the server count against an answer") {
  // Eight requests granted at once, all awaiting their answers; the server counts them as
  // they arrive (10 allowed): the first to arrive says 9 are left, but 7 are on their way.
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  std::vector<Decision> grants;
  for (int i = 0; i < 8; ++i) {
    grants.push_back(key.ask(observing(k_t0)));
    REQUIRE(grants.back().allowed);
  }
  // The answer of the fifth grant arrived first.
  observe(key.state(), k_t0 + 50 * k_ms, said(9, 5 * k_s, grants[4].grant.seq));
  Decision standing = key.standing(k_t0 + 50 * k_ms);
  REQUIRE(standing.budget);
  CHECK(standing.budget->remaining == 2);
  // The others' answers, in the order they arrived, say the same.
  int remaining = 8;
  for (int i : {0, 7, 1, 2, 3, 6, 5}) {
    observe(key.state(), k_t0 + 60 * k_ms, said(remaining--, 5 * k_s, grants[i].grant.seq));
    CHECK(key.standing(k_t0 + 60 * k_ms).budget->remaining == 2);
  }
  CHECK(key.state().server.awaited.empty());
  CHECK(key.attempt(k_t0 + 70 * k_ms).allowed);
  CHECK(key.attempt(k_t0 + 70 * k_ms).allowed);
  CHECK_FALSE(key.attempt(k_t0 + 70 * k_ms).allowed);
}

TEST_CASE("core::observe: a stale answer never loosens the budget") {
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  Decision older = key.ask(observing(k_t0));
  Decision newer = key.ask(observing(k_t0 + k_ms));
  // The newer request arrived second and found nothing left; the older one's answer, which
  // said 5, comes after.
  observe(key.state(), k_t0 + 10 * k_ms, said(0, 4 * k_s, newer.grant.seq));
  observe(key.state(), k_t0 + 20 * k_ms, said(5, 4 * k_s, older.grant.seq));
  CHECK_FALSE(key.attempt(k_t0 + 30 * k_ms).allowed);
  // A newer answer that says more is left does not undo the ceiling before its reset
  // either: the ceilings are all true until their resets.
  observe(key.state(), k_t0 + 40 * k_ms, said(50, 4 * k_s));
  CHECK_FALSE(key.attempt(k_t0 + 50 * k_ms).allowed);
  // One with a later reset binds after the first ends.
  observe(key.state(), k_t0 + 60 * k_ms, said(2, 9 * k_s));
  Decision waiter = key.reserve(k_t0 + 70 * k_ms);
  REQUIRE(waiter.allowed);
  CHECK(waiter.grant.at == k_t0 + 4010 * k_ms);
  CHECK(key.reserve(k_t0 + 70 * k_ms).allowed);
  Decision third = key.reserve(k_t0 + 70 * k_ms);
  REQUIRE(third.allowed);
  CHECK(third.grant.at == k_t0 + 9060 * k_ms);
}

TEST_CASE("core::observe --grant: the grants made since that request count against it") {
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  Decision first = key.attempt(k_t0); // not awaiting: a wrapper will observe it
  REQUIRE(first.allowed);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(key.attempt(k_t0 + k_ms).allowed);
  }
  observe(key.state(), k_t0 + 10 * k_ms, said(5, 4 * k_s, first.grant.seq));
  CHECK(key.standing(k_t0 + 10 * k_ms).budget->remaining == 2);
  // Without it, only what is granted from now on.
  TestKey bare(Algorithm::token_bucket, {limit_of(100, k_s)});
  for (int i = 0; i < 4; ++i) {
    REQUIRE(bare.attempt(k_t0).allowed);
  }
  observe(bare.state(), k_t0 + 10 * k_ms, said(5, 4 * k_s));
  CHECK(bare.standing(k_t0 + 10 * k_ms).budget->remaining == 5);
  // A sequence the key never reached (from before a reset) is taken as the key's now.
  observe(bare.state(), k_t0 + 10 * k_ms, said(3, 4 * k_s, 1000));
  CHECK(bare.standing(k_t0 + 10 * k_ms).budget->remaining == 3);
}

TEST_CASE("core::give_back: a reservation given back before it left raises what counted it") {
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  observe(key.state(), k_t0, said(3, 4 * k_s));
  Decision a = key.ask(observing(k_t0));
  Decision b = key.ask(observing(k_t0));
  REQUIRE(b.allowed);
  CHECK(key.standing(k_t0).budget->remaining == 1);
  key.cancel(k_t0 + k_ms, b);
  CHECK(key.standing(k_t0 + k_ms).budget->remaining == 2);
  // One that awaited no answer may not have been counted by a later ceiling: nothing back.
  Decision c = key.attempt(k_t0 + 2 * k_ms);
  key.cancel(k_t0 + 3 * k_ms, c);
  CHECK(key.standing(k_t0 + 3 * k_ms).budget->remaining == 1);
  // Given back twice, or answered first: nothing more.
  key.cancel(k_t0 + 4 * k_ms, b);
  CHECK(key.standing(k_t0 + 4 * k_ms).budget->remaining == 1);
  (void)a;
}

TEST_CASE("core::decide: a grant whose slot is past a reset does not count against it") {
  TestKey key(Algorithm::sliding_log, {limit_of(1, k_s)});
  observe(key.state(), k_t0, said(2, 1500 * k_ms));
  REQUIRE(key.attempt(k_t0).allowed);
  // The next slot of the limit is after the reset: the budget keeps its 1 for another
  // caller before it.
  Decision later = key.reserve(k_t0 + 100 * k_ms);
  REQUIRE(later.allowed);
  CHECK(later.grant.at == k_t0 + k_s);
  CHECK(key.standing(k_t0 + 100 * k_ms).budget->remaining == 0);
  TestKey second(Algorithm::sliding_log, {limit_of(1, 2 * k_s)});
  observe(second.state(), k_t0, said(2, 1500 * k_ms));
  REQUIRE(second.attempt(k_t0).allowed);
  Decision past = second.reserve(k_t0 + 100 * k_ms);
  REQUIRE(past.allowed);
  CHECK(past.grant.at == k_t0 + 2 * k_s);
  CHECK(second.standing(k_t0 + 100 * k_ms).budget->remaining == 1);
}

TEST_CASE("core::overdrawn_until: what may reach the server exceeds what it said was left") {
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  Decision a = key.ask(observing(k_t0, true));
  Decision b = key.ask(observing(k_t0, true));
  CHECK(overdrawn_until(key.state().server, k_t0) == 0);
  // Another request's answer: only 1 left, and both are still on their way.
  observe(key.state(), k_t0 + 10 * k_ms, said(1, 2 * k_s));
  CHECK(overdrawn_until(key.state().server, k_t0 + 10 * k_ms) == k_t0 + 2010 * k_ms);
  // One waiter goes back: the other may go.
  key.cancel(k_t0 + 20 * k_ms, b);
  CHECK(overdrawn_until(key.state().server, k_t0 + 20 * k_ms) == 0);
  (void)a;
}

TEST_CASE("core::is_fresh: a key is not fresh while a budget or an awaited answer runs") {
  TestKey key(Algorithm::token_bucket, {limit_of(10, k_s)});
  REQUIRE(key.ask(observing(k_t0)).allowed);
  CHECK_FALSE(key.fresh(k_t0 + 2 * k_s));
  CHECK(key.standing(k_t0 + 2 * k_s).reset_after == k_answer_wait - 2 * k_s);
  CHECK(key.fresh(k_t0 + k_answer_wait));
  observe(key.state(), k_t0 + k_answer_wait, said(4, 90 * k_s));
  CHECK_FALSE(key.fresh(k_t0 + k_answer_wait + 89 * k_s));
  CHECK(limits_fresh(key.state(), key.log(), k_t0 + k_answer_wait + 89 * k_s));
  CHECK(key.fresh(k_t0 + k_answer_wait + 90 * k_s));
}

TEST_CASE("core::observe keeps a bounded budget, never looser than what was said") {
  ServerWord word;
  std::mt19937_64 random(7);
  std::vector<BudgetEntry> said_all;
  for (int i = 0; i < 200; ++i) {
    Observation observation = said(static_cast<std::int64_t>(random() % 50),
                                   static_cast<Nanos>(1 + random() % 100) * k_s);
    observe_server(word, k_t0, observation);
    said_all.push_back(
        {observation.standings[0].remaining, k_t0 + observation.standings[0].reset_after});
    REQUIRE(word.budget.size() <= k_max_budget_entries);
    REQUIRE(within_bounds(word));
    // At every moment, the budget admits no more than any answer said.
    for (Nanos at = k_t0; at < k_t0 + 101 * k_s; at += k_s) {
      std::int64_t least = std::numeric_limits<std::int64_t>::max();
      for (const BudgetEntry& entry : said_all) {
        if (entry.reset > at) {
          least = std::min(least, entry.ceiling);
        }
      }
      if (least == std::numeric_limits<std::int64_t>::max()) {
        continue; // no answer holds this moment
      }
      // A grant of one more than the least ceiling is not admitted at `at`.
      REQUIRE(budget_open(word, at, least + 1) > at);
    }
  }
}

TEST_CASE("core::count_grant moves the key's numbers down past 2^52, changing no budget") {
  ServerWord word;
  word.grant_seq = k_max_grant_seq - 2;
  observe_server(word, k_t0, said(5, 10 * k_s));
  count_grant(word, k_t0, k_t0, 1, true);
  CHECK(budget_standing(word, k_t0)->remaining == 4);
  std::int64_t seq = count_grant(word, k_t0, k_t0, 3, true);
  CHECK(seq == 3);
  CHECK(budget_standing(word, k_t0)->remaining == 1);
  CHECK(within_bounds(word));
  return_grant(word, seq, 3, k_t0);
  CHECK(budget_standing(word, k_t0)->remaining == 4);
}

TEST_CASE("core::observe: the policies of the last answer that named any are kept") {
  ServerWord word;
  Observation observation;
  observation.policies = {{"ratelimit-policy", "default", 10, 5 * k_s},
                          {"ratelimit-policy", std::string(100, 'x'), 5000, 3600 * k_s}};
  observe_server(word, k_t0, observation);
  REQUIRE(word.policies.size() == 2);
  CHECK(word.policies[1].name.size() == k_max_policy_text);
  observe_server(word, k_t0, said(3, k_s));
  CHECK(word.policies.size() == 2);
  CHECK(within_bounds(word));
}

// A server that counts the requests that arrive (R allowed, none refused after): requests
// granted by a key under its budget, each taking a random time to arrive and its answer a
// random time to be observed (so that answers come out of order), some given back before
// they leave, some whose answers are lost. Whatever the order, the key never sends more
// than the server said it had left.
TEST_CASE("core::decide under the budget never sends more than the server said was left") {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 random(seed);
    auto uniform = [&](std::int64_t low, std::int64_t high) {
      return std::uniform_int_distribution<std::int64_t>(low, high)(random);
    };
    std::int64_t capacity = uniform(1, 30);
    TestKey key(Algorithm::token_bucket, {limit_of(1000, k_s)});
    // What the server counted before: a first answer, with nothing else on its way.
    std::int64_t counted = uniform(0, capacity);
    observe(key.state(), k_t0, said(capacity - counted, 3600 * k_s));
    struct Event {
      Nanos at;
      int kind; // 0: arrival at the server, 1: answer observed
      std::int64_t seq;
      std::int64_t remaining;
      bool operator>(const Event& other) const { return at > other.at; }
    };
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
    Nanos now = k_t0;
    for (int step = 0; step < 300; ++step) {
      now += uniform(0, 20) * k_ms;
      while (!events.empty() && events.top().at <= now) {
        Event event = events.top();
        events.pop();
        if (event.kind == 0) {
          ++counted;
          REQUIRE(counted <= capacity);
          if (uniform(0, 19) != 0) { // some answers are never observed
            events.push({event.at + uniform(0, 80) * k_ms, 1, event.seq, capacity - counted});
          }
        } else {
          bool bare = uniform(0, 9) == 0;
          observe(key.state(), event.at,
                  said(event.remaining, 3600 * k_s,
                       bare ? std::nullopt : std::optional<std::int64_t>(event.seq)));
        }
      }
      Decision decision = key.ask(observing(now, uniform(0, 3) == 0));
      if (!decision.allowed || decision.grant.at > now + 10 * k_s) {
        if (decision.allowed) {
          key.cancel(now, decision);
        }
        continue;
      }
      if (uniform(0, 9) == 0) {
        key.cancel(now, decision); // given back before it left
        continue;
      }
      events.push({decision.grant.at + uniform(0, 80) * k_ms, 0, decision.grant.seq, 0});
    }
  }
}

TEST_CASE("core::decide: once the latest answer is stale, one probe goes and the next wait for "
          "its answer") {
  TestKey key(Algorithm::token_bucket, {limit_of(100, k_s)});
  Decision first = key.ask(observing(k_t0));
  REQUIRE(first.allowed);
  // Its answer, 20 ms after its slot: 8 left until 5 s from then.
  observe(key.state(), k_t0 + 20 * k_ms, said(8, 5 * k_s, first.grant.seq));
  CHECK(key.state().server.answer_latency == 20 * k_ms);
  CHECK(key.state().server.answered_at == k_t0 + 20 * k_ms);
  // Fresh (within a fifth of the 5 s to the reset): grants go together.
  CHECK(key.ask(observing(k_t0 + 500 * k_ms, true)).grant.at == k_t0 + 500 * k_ms);
  CHECK(key.ask(observing(k_t0 + 500 * k_ms, true)).grant.at == k_t0 + 500 * k_ms);
  // Stale: the first goes at once, a probe; the next after its answer, 1.5 times the latency
  // later but at least a hundredth of the 5 s (50 ms).
  Decision probe = key.ask(observing(k_t0 + 2 * k_s, true));
  REQUIRE(probe.allowed);
  CHECK(probe.grant.at == k_t0 + 2 * k_s);
  CHECK(probe.budget_until == 0);
  Decision held = key.ask(observing(k_t0 + 2 * k_s, true));
  REQUIRE(held.allowed);
  CHECK(held.grant.at == k_t0 + 2050 * k_ms);
  CHECK(held.budget_until == k_t0 + 2050 * k_ms);
  // A grant that does not await its answer holds nobody.
  Decision untracked = key.reserve(k_t0 + 2100 * k_ms);
  CHECK(untracked.grant.at == k_t0 + 2100 * k_ms);
  // The probe's answer says nothing is left: the held waiter wakes to an overdrawn budget, and
  // reserves again after the reset.
  observe(key.state(), k_t0 + 2100 * k_ms, said(0, 3 * k_s, probe.grant.seq));
  CHECK(key.state().server.answer_latency == 100 * k_ms);
  CHECK(overdrawn_until(key.state().server, k_t0 + 2100 * k_ms) == k_t0 + 5100 * k_ms);
  // A new answer is fresh again: no probe holds the next; the budget does, to its reset.
  CHECK(key.ask(observing(k_t0 + 2500 * k_ms, true)).grant.at == k_t0 + 5100 * k_ms);
}

TEST_CASE("core::budget_open: no probe without a budget, and none before the answer is stale") {
  ServerWord word;
  word.answered_at = k_t0;
  word.answer_latency = 100 * k_ms;
  word.awaited.push_back({1, 1, k_t0 + 3 * k_s, k_t0 + 60 * k_s});
  // No ceiling runs: nothing holds.
  CHECK(budget_open(word, k_t0 + 3 * k_s, 1) == k_t0 + 3 * k_s);
  word.budget.push_back({100, k_t0 + 10 * k_s});
  word.grant_seq = 1;
  // Stale after 2 s (a fifth of 10 s): the probe at 3 s holds the next until 3.15 s.
  CHECK(budget_open(word, k_t0 + 1 * k_s, 1) == k_t0 + 1 * k_s);
  CHECK(budget_open(word, k_t0 + 3 * k_s, 1) == k_t0 + 3150 * k_ms);
  // Never past the budget's last reset.
  word.answer_latency = 20 * k_s;
  CHECK(budget_open(word, k_t0 + 3 * k_s, 1) == k_t0 + 10 * k_s);
}

TEST_CASE("core::probe_held_until: a waiter that wakes to a stale budget waits for the answer "
          "of a probe that went before it") {
  ServerWord word;
  word.answered_at = k_t0;
  word.answer_latency = 100 * k_ms;
  word.grant_seq = 3;
  word.budget.push_back({100, k_t0 + 10 * k_s});
  // Three waiters reserved for 4 s when the budget was fresh.
  word.awaited.push_back({1, 1, k_t0 + 4 * k_s, k_t0 + 64 * k_s});
  word.awaited.push_back({2, 1, k_t0 + 4 * k_s, k_t0 + 64 * k_s});
  word.awaited.push_back({3, 1, k_t0 + 4 * k_s, k_t0 + 64 * k_s});
  // The first goes: nothing before it.
  CHECK(probe_held_until(word, k_t0 + 4 * k_s, 1, k_t0 + 4 * k_s) == 0);
  // The others wait for its answer: 1.5 times the latency.
  CHECK(probe_held_until(word, k_t0 + 4 * k_s, 2, k_t0 + 4 * k_s) == k_t0 + 4150 * k_ms);
  CHECK(probe_held_until(word, k_t0 + 4 * k_s, 3, k_t0 + 4 * k_s) == k_t0 + 4150 * k_ms);
  // Fresh, nobody waits.
  CHECK(probe_held_until(word, k_t0 + 1 * k_s, 3, k_t0 + 1 * k_s) == 0);
  // Once the probe's answer came, the budget is fresh again.
  observe_server(word, k_t0 + 4100 * k_ms, said(50, 5 * k_s, 1));
  CHECK(probe_held_until(word, k_t0 + 4150 * k_ms, 2, k_t0 + 4 * k_s) == 0);
}
