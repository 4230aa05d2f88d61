// One key, one budget: calls on one key that name different limits (periods, rates,
// bursts) all count every grant already made on it. The examples that once refilled a key,
// and seeded random sequences of calls with changing limits, each grant checked against
// the limits of its own call:
// - sliding log: at most N, this grant included, in the PERIOD ending at it, counting
//   every earlier grant whatever limits it was made under;
// - the buckets: their bound over every earlier grant when no call names a limit slower
//   than the slowest limit of the call before it (the rule the man page states), and else
//   over every grant at or after the time from which the key has held the limit (named or
//   remembered): its first call derives it from the units in use, not from the history;
// - the windows: their bound over every earlier grant, whatever limits it was made under
//   (the key counts every grant while a store keeps it; a limit it holds, named or
//   remembered, counts exactly, and one first named assumes in its window what no stored
//   window can tell of the key's count).
#include "core/bounds.hpp"
#include "core/rules.hpp"

#include "core_test_key.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <random>
#include <string>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

// A key driven with explicit times and the limits of each call.
class Key {
public:
  explicit Key(Algorithm algorithm) { m_state.algorithm = algorithm; }

  Decision call(Nanos now, std::vector<Limit> limits, std::int64_t cost = 1, bool reserve = false,
                Nanos max_wait = std::numeric_limits<Nanos>::max()) {
    REQUIRE_FALSE(check_limits(m_state.algorithm, limits, cost, false).has_value());
    Request request{now, cost, reserve, max_wait};
    return decide(m_state, limits, m_log, request);
  }

  KeyState& state() { return m_state; }
  MemoryGrantLog& log() { return m_log; }

private:
  KeyState m_state;
  MemoryGrantLog m_log;
};

constexpr Nanos k_epoch = 1'767'225'600 * k_s; // 2026-01-01 00:00:00 UTC

} // namespace

TEST_CASE("core::decide sliding-log 1/s, 2/2s, 2/2s, 1/s on one key: 3 grants never fit 2/2s") {
  Key key(Algorithm::sliding_log);
  CHECK(key.call(k_epoch, {limit_of(1, k_s)}).allowed);
  CHECK(key.call(k_epoch + 1 * k_ms, {limit_of(2, 2 * k_s)}).allowed);
  CHECK_FALSE(key.call(k_epoch + 2 * k_ms, {limit_of(2, 2 * k_s)}).allowed);
  CHECK_FALSE(key.call(k_epoch + 3 * k_ms, {limit_of(1, k_s)}).allowed);
  // One log, not one per period.
  CHECK(key.log().size() == 2);
}

TEST_CASE("core::decide leaky-bucket 3/250ms then 20/min 1 ms later: the first grant counts") {
  Key key(Algorithm::leaky_bucket);
  CHECK(key.call(k_epoch, {limit_of(3, 250 * k_ms)}).allowed);
  Decision second = key.call(k_epoch + 1 * k_ms, {limit_of(20, k_min)});
  CHECK_FALSE(second.allowed);
  // The unit in use, 83 ms at the old rate, takes 3 s at the new one.
  CHECK(second.wait > 2900 * k_ms);
  CHECK(second.wait <= 3 * k_s);
}

TEST_CASE("core::decide token-bucket 2/min twice, then 1/30s (the same rate): the third waits") {
  Key key(Algorithm::token_bucket);
  CHECK(key.call(k_epoch, {limit_of(2, k_min)}).allowed);
  CHECK(key.call(k_epoch, {limit_of(2, k_min)}).allowed);
  Decision third = key.call(k_epoch, {limit_of(1, 30 * k_s)});
  CHECK_FALSE(third.allowed);
  CHECK(third.wait == k_min);
  // And the state now holds the limit in force, not the one no longer given.
  REQUIRE(key.state().limits.size() == 1);
  CHECK(key.state().limits[0].limit == limit_of(1, 30 * k_s));
}

TEST_CASE("core::decide the state holds the limits of the last call, granted or denied") {
  Key key(Algorithm::token_bucket);
  CHECK(key.call(k_epoch, {limit_of(1, k_min)}).allowed);
  // The minute's one unit in use is one unit of 100/s, which has room for it.
  CHECK(key.call(k_epoch, {limit_of(100, k_s)}).allowed);
  REQUIRE(key.state().limits.size() == 1);
  CHECK(key.state().limits[0].limit == limit_of(100, k_s));
  // Back to 1/min: two units in use at 100/s bound nothing for the slower limit; they
  // are kept, at its rate: two minutes of debt, a token in two minutes.
  Decision slow = key.call(k_epoch, {limit_of(1, k_min)});
  CHECK_FALSE(slow.allowed);
  CHECK(slow.wait == 2 * k_min);
  REQUIRE(key.state().limits.size() == 1);
  CHECK(key.state().limits[0].limit == limit_of(1, k_min));
}

TEST_CASE("core::decide a changed limit never makes a key fresh, for every algorithm") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    Key key(algorithm);
    std::vector<Limit> before{limit_of(5, k_s)};
    for (int i = 0; i < 5; ++i) {
      Nanos now = k_epoch + (algorithm == Algorithm::leaky_bucket ? i * 200 * k_ms : 0);
      REQUIRE(key.call(now, before).allowed);
    }
    Nanos now = k_epoch + (algorithm == Algorithm::leaky_bucket ? 801 * k_ms : 1 * k_ms);
    // A slower limit with room for 5 more: the 5 (or the last, for the leaky bucket) in
    // use stay in use.
    Decision after = key.call(now, {limit_of(5, 10 * k_s)});
    CHECK_FALSE(after.allowed);
    CHECK_FALSE(is_fresh(key.state(), key.log(), now));
  }
}

namespace {

struct Made {
  Nanos at = 0;
  std::int64_t cost = 0;
  std::size_t set = 0; // the limits of its call
};

std::vector<Limit> random_set(Algorithm algorithm, std::mt19937_64& random) {
  auto pick = [&](std::initializer_list<std::int64_t> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(random() % values.size()));
  };
  std::vector<Limit> set;
  std::size_t size = 1 + random() % 2;
  while (set.size() < size) {
    std::int64_t count = pick({1, 2, 3, 5, 10});
    Nanos period = pick({300 * k_ms, 700 * k_ms, k_s, 2500 * k_ms, 7 * k_s});
    std::int64_t burst = takes_burst(algorithm) ? pick({1, count, 2 * count + 1}) : count;
    if (std::none_of(set.begin(), set.end(),
                     [&](const Limit& l) { return l.rate.period == period; })) {
      set.push_back({{count, period}, burst});
    }
  }
  return set;
}

Nanos largest_interval(const std::vector<Limit>& set) {
  Nanos largest = 0;
  for (const Limit& limit : set) {
    largest = std::max(largest, limit.rate.emission_interval());
  }
  return largest;
}

// What is wrong with grant `j` under limit `limit` of its call, counting the grants made
// before it (and itself) from `since` on, the `first` made and later, or an empty string.
std::string check_grant(Algorithm algorithm, const Limit& limit, const std::vector<Made>& made,
                        std::size_t j, Nanos since, std::size_t first = 0) {
  Nanos u = made[j].at;
  std::vector<Made> counted;
  for (std::size_t i = first; i <= j; ++i) {
    if (made[i].at >= since && made[i].at <= u) {
      counted.push_back(made[i]);
    }
  }
  Nanos period = limit.rate.period;
  switch (algorithm) {
  case Algorithm::sliding_log:
  case Algorithm::leaky_bucket: {
    std::int64_t inside = 0;
    for (const Made& m : counted) {
      inside += m.at > u - period ? m.cost : 0;
    }
    if (inside > limit.rate.count) {
      return std::to_string(inside) + " in the period ending at grant " + std::to_string(j);
    }
    return {};
  }
  case Algorithm::fixed_window: {
    std::int64_t inside = 0;
    for (const Made& m : counted) {
      inside += window_start(m.at, period) == window_start(u, period) ? m.cost : 0;
    }
    if (inside > limit.rate.count) {
      return std::to_string(inside) + " in the window of grant " + std::to_string(j);
    }
    return {};
  }
  case Algorithm::sliding_window: {
    Nanos start = window_start(u, period);
    std::int64_t current = 0;
    std::int64_t previous = 0;
    for (const Made& m : counted) {
      current += window_start(m.at, period) == start ? m.cost : 0;
      previous += window_start(m.at, period) == start - period ? m.cost : 0;
    }
    Wide scaled = Wide{current} * period + Wide{previous} * (period - (u - start));
    if (scaled > Wide{limit.rate.count} * period) {
      return "the estimate exceeds N at grant " + std::to_string(j);
    }
    return {};
  }
  case Algorithm::token_bucket: {
    // Every closed interval [s, u]: at most burst + (u - s) / interval.
    std::sort(counted.begin(), counted.end(),
              [](const Made& a, const Made& b) { return a.at > b.at; });
    Wide interval = limit.rate.emission_interval();
    Wide sum = 0;
    for (const Made& m : counted) {
      sum += m.cost;
      if (sum * interval > Wide{limit.burst} * interval + (u - m.at)) {
        return "more than burst + rate * t before grant " + std::to_string(j);
      }
    }
    return {};
  }
  }
  return "unknown algorithm";
}

struct Totals {
  int grants = 0;
  int denials = 0;
  int changes = 0;
};

// One seeded run: calls with limits changing among a few random sets. `slowing_down`:
// whether a call may name a limit slower than the slowest of the call before it.
void run(Algorithm algorithm, std::uint64_t seed, bool slowing_down, Totals& totals) {
  std::mt19937_64 random(seed);
  std::vector<std::vector<Limit>> sets;
  for (int i = 0; i < 4; ++i) {
    sets.push_back(random_set(algorithm, random));
  }
  Key key(algorithm);
  std::vector<Made> made;
  std::size_t current = 0;
  // Buckets: each limit the key holds (named or remembered), and the time from which it has
  // held it without a break, when the first call naming it derived its state.
  std::vector<std::pair<Limit, Nanos>> held;
  bool bucket = algorithm == Algorithm::token_bucket || algorithm == Algorithm::leaky_bucket;
  Nanos now = k_epoch + static_cast<Nanos>(random() % k_s);
  INFO("algorithm ", std::string(algorithm_name(algorithm)), ", seed ", seed);
  for (int step = 0; step < 400; ++step) {
    switch (random() % 6) {
    case 0:
      break;
    case 1:
    case 2:
      now += static_cast<Nanos>(random() % (100 * k_ms));
      break;
    case 3:
    case 4:
      now += static_cast<Nanos>(random() % k_s);
      break;
    default:
      now += static_cast<Nanos>(random() % (5 * k_s));
      break;
    }
    if (random() % 5 == 0) {
      std::size_t next = random() % sets.size();
      bool allowed =
          slowing_down || std::all_of(sets[next].begin(), sets[next].end(), [&](const Limit& l) {
            return l.rate.emission_interval() <= largest_interval(sets[current]);
          });
      if (allowed && next != current) {
        current = next;
        ++totals.changes;
      }
    }
    const std::vector<Limit>& limits = sets[current];
    std::int64_t most = std::numeric_limits<std::int64_t>::max();
    for (const Limit& limit : limits) {
      most = std::min(most, limit.max_cost(algorithm));
    }
    std::int64_t cost = random() % 4 == 0 ? 1 + static_cast<std::int64_t>(random() % most) : 1;
    bool reserve = random() % 3 == 0;
    Nanos max_wait = reserve ? static_cast<Nanos>(random() % (3 * k_s)) : 0;
    Decision decision = key.call(now, limits, cost, reserve, reserve ? max_wait : 0);
    if (bucket) {
      std::vector<std::pair<Limit, Nanos>> still;
      for (const std::vector<LimitState>* states : {&key.state().limits, &key.state().remembered}) {
        for (const LimitState& s : *states) {
          auto found = std::find_if(held.begin(), held.end(),
                                    [&](const auto& h) { return h.first == s.limit; });
          still.emplace_back(s.limit, found != held.end() ? found->second : decision.now);
        }
      }
      held = std::move(still);
    }
    if (!decision.allowed) {
      ++totals.denials;
      continue;
    }
    ++totals.grants;
    made.push_back({decision.grant.at, cost, current});
    std::size_t j = made.size() - 1;
    for (std::size_t l = 0; l < limits.size(); ++l) {
      INFO("step ", step, ", limit ", limits[l].rate.count, "/", limits[l].rate.period, " burst ",
           limits[l].burst);
      // The sliding log and the windows count every grant; a bucket every grant at or after
      // the time it has held the limit from (a limit it did not hold was derived from the
      // units in use at other rates, not from the history), or all of them when no call
      // names a limit slower than those before.
      Nanos since = std::numeric_limits<Nanos>::min();
      if (bucket && slowing_down) {
        auto found = std::find_if(held.begin(), held.end(),
                                  [&](const auto& h) { return h.first == limits[l]; });
        REQUIRE(found != held.end());
        since = found->second;
      }
      std::string problem = check_grant(algorithm, limits[l], made, j, since);
      REQUIRE_MESSAGE(problem.empty(), problem);
    }
  }
}

void run_many(Algorithm algorithm) {
  Totals totals;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    run(algorithm, seed * 104'729 + static_cast<std::uint64_t>(algorithm), seed % 2 == 0, totals);
  }
  CHECK(totals.grants > 10000);
  CHECK(totals.denials > 5000);
  CHECK(totals.changes > 2000);
}

} // namespace

TEST_CASE("core::sliding_log property: with changing limits, every grant counts every earlier") {
  run_many(Algorithm::sliding_log);
}

TEST_CASE("core::token_bucket property: with changing limits, each grant within its own limits") {
  run_many(Algorithm::token_bucket);
}

TEST_CASE("core::leaky_bucket property: with changing limits, at most N in any PERIOD") {
  run_many(Algorithm::leaky_bucket);
}

TEST_CASE("core::fixed_window property: with changing limits, at most N per window") {
  run_many(Algorithm::fixed_window);
}

TEST_CASE("core::sliding_window property: with changing limits, the estimate within N") {
  run_many(Algorithm::sliding_window);
}

TEST_CASE("core::decide a 2/10s caller and a 12/min caller on one key count each other's grants") {
  // The same rate, other bursts: under the sliding log and the token bucket each grant is
  // within its caller's limit counting every grant on the key, the other caller's too.
  for (Algorithm algorithm : {Algorithm::sliding_log, Algorithm::token_bucket}) {
    CAPTURE(algorithm_name(algorithm));
    Key key(algorithm);
    std::vector<Made> made;
    int granted_alone = 0;
    Key alone(algorithm);
    for (int i = 0; i < 240; ++i) {
      Nanos now = k_epoch + i * 500 * k_ms;
      std::size_t caller = static_cast<std::size_t>(i % 2);
      Limit limit = caller == 0 ? limit_of(2, 10 * k_s) : limit_of(12, k_min);
      if (caller == 0 && alone.call(now, {limit}).allowed) {
        ++granted_alone;
      }
      if (!key.call(now, {limit}).allowed) {
        continue;
      }
      made.push_back({now, 1, caller});
      std::string problem =
          check_grant(algorithm, limit, made, made.size() - 1, std::numeric_limits<Nanos>::min());
      REQUIRE_MESSAGE(problem.empty(), problem);
    }
    // Two minutes: the 2/10s caller alone takes 2 + 2 per 10 s; both share one budget of
    // 12 a minute (plus the burst), not the sum.
    CHECK(granted_alone >= 24);
    CHECK(made.size() <= 12 + 24);
    CHECK(std::count_if(made.begin(), made.end(), [](const Made& m) { return m.set == 1; }) > 0);
  }
}

TEST_CASE("core::decide buckets: waiters at 10/s and at 1/s alternating add up, never compound") {
  // Every grant takes a second of 1/s, whichever limit its call named: 80 grants owe about
  // 80 s at 1/s, not ten times more at each change of limits. (A leaky bucket's queue is
  // made deep enough for them all.)
  for (Algorithm algorithm : {Algorithm::token_bucket, Algorithm::leaky_bucket}) {
    CAPTURE(algorithm_name(algorithm));
    bool leaky = algorithm == Algorithm::leaky_bucket;
    Limit fast = limit_of(10, k_s, leaky ? 1000 : 0);
    Limit slow = limit_of(1, k_s, leaky ? 1000 : 0);
    Key key(algorithm);
    Decision last;
    for (int i = 0; i < 40; ++i) {
      REQUIRE(key.call(k_epoch, {fast}, 1, true).allowed);
      last = key.call(k_epoch, {slow}, 1, true);
      REQUIRE(last.allowed);
    }
    CHECK(last.wait >= 78 * k_s);
    CHECK(last.wait <= 80 * k_s);
    // 10/s, remembered meanwhile, holds the reservations made at 1/s: the next goes after
    // them, less what its own burst allows.
    REQUIRE(key.state().remembered.size() == 1);
    CHECK(key.state().remembered[0].limit == fast);
    CHECK(key.call(k_epoch, {fast}, 1, true).wait >= last.wait - k_s);
  }
}

TEST_CASE("core::decide buckets: reservations queued at a faster limit count at a slower one") {
  // 10/s, burst 1 (a queue of 30): twenty waiters reserve the next two seconds. A call at 1/s
  // then counts each of them, not only a burst's worth.
  for (Algorithm algorithm : {Algorithm::token_bucket, Algorithm::leaky_bucket}) {
    CAPTURE(algorithm_name(algorithm));
    Key key(algorithm);
    for (int i = 0; i < 20; ++i) {
      REQUIRE(key.call(k_epoch, {limit_of(10, k_s, algorithm == Algorithm::leaky_bucket ? 30 : 1)},
                       1, true)
                  .allowed);
    }
    Decision slow = key.call(
        k_epoch, {limit_of(1, k_s, algorithm == Algorithm::leaky_bucket ? 30 : 1)}, 1, true);
    REQUIRE(slow.allowed);
    CHECK(slow.wait >= 19 * k_s);
  }
}

TEST_CASE("core::decide buckets: a key is not fresh while a remembered limit holds something") {
  Key key(Algorithm::token_bucket);
  REQUIRE(key.call(k_epoch, {limit_of(1, k_min)}).allowed);
  Decision fast = key.call(k_epoch, {limit_of(100, k_s)});
  REQUIRE(fast.allowed);
  REQUIRE(key.state().remembered.size() == 1);
  // Two grants at 1/min: nothing in use two minutes on.
  CHECK(fast.reset_after == 2 * k_min);
  CHECK_FALSE(is_fresh(key.state(), key.log(), k_epoch + 2 * k_min - 1));
  CHECK(is_fresh(key.state(), key.log(), k_epoch + 2 * k_min));
}

TEST_CASE("core::decide buckets: a key remembers at most 16 limits besides its call's") {
  Key key(Algorithm::token_bucket);
  for (std::int64_t count = 1; count <= 20; ++count) {
    REQUIRE(key.call(k_epoch, {limit_of(count * 1000, k_min)}).allowed);
  }
  CHECK(key.state().remembered.size() == 16);
  // The last call's limit first, then the earlier ones, most recently named first.
  CHECK(key.state().remembered.front().limit == limit_of(19'000, k_min));
  CHECK(key.state().remembered.back().limit == limit_of(4'000, k_min));
}

namespace {

// The cost of `made` grants in [from, until).
std::int64_t cost_between(const std::vector<Made>& made, Nanos from, Nanos until) {
  std::int64_t cost = 0;
  for (const Made& m : made) {
    cost += m.at >= from && m.at < until ? m.cost : 0;
  }
  return cost;
}

} // namespace

TEST_CASE(
    "core::decide sliding-window 600/min and 10/s alternating: usable, exact, never damaged") {
  // Two callers take turns on one key, as fast as they can, for minutes: what the key stores
  // never passes its bounds (once it did, by an unknown count doubled at each change of
  // limits), no call is held back for longer than its own limits can explain (once the
  // minute's one grant locked 10/s for the rest of the minute), and each grant keeps the
  // estimate of its own limit within N, counting the other caller's grants.
  Key key(Algorithm::sliding_window);
  const Limit loose = limit_of(600, k_min);
  const Limit strict = limit_of(10, k_s);
  std::vector<Made> made;
  int granted[2] = {0, 0};
  for (int round = 0; round < 1200; ++round) {
    Nanos now = k_epoch + 25 * k_ms + round * 150 * k_ms;
    for (std::size_t caller = 0; caller < 2; ++caller) {
      const Limit& limit = caller == 0 ? loose : strict;
      Decision decision = key.call(now + static_cast<Nanos>(caller) * k_ms, {limit});
      INFO("round ", round, ", caller ", caller);
      REQUIRE(within_bounds(key.state()));
      if (!decision.allowed) {
        REQUIRE(decision.wait <= 2 * limit.rate.period);
        continue;
      }
      ++granted[caller];
      made.push_back({decision.grant.at, 1, caller});
      std::string problem = check_grant(Algorithm::sliding_window, limit, made, made.size() - 1,
                                        std::numeric_limits<Nanos>::min());
      REQUIRE_MESSAGE(problem.empty(), problem);
    }
  }
  // Three minutes of turns: both callers granted throughout, and one budget shared.
  CHECK(granted[0] > 300);
  CHECK(granted[1] > 300);
  // Each remembers the other: named again, a limit finds every grant counted exactly.
  REQUIRE(key.state().remembered.size() == 1);
  CHECK(key.state().remembered[0].limit == loose);
}

TEST_CASE("core::decide windows: a longer period counts the grants made before the stored window") {
  // 1/s once a second for four seconds, then 5/5s in the same aligned 5 s window: one more,
  // not four (the stored window held only the last second's grant). 2/s twice a second, then
  // 4/2s: none more, not two.
  for (Algorithm algorithm : {Algorithm::fixed_window, Algorithm::sliding_window}) {
    CAPTURE(algorithm_name(algorithm));
    // The sliding window counts the previous second too: 2/s admits one grant a second.
    Limit per_second = algorithm == Algorithm::fixed_window ? limit_of(1, k_s) : limit_of(2, k_s);
    Key key(algorithm);
    std::vector<Made> made;
    for (int second = 0; second < 4; ++second) {
      Decision decision = key.call(k_epoch + second * k_s + 10 * k_ms, {per_second});
      REQUIRE(decision.allowed);
      made.push_back({decision.grant.at, 1, 0});
    }
    int more = 0;
    for (int i = 0; i < 6; ++i) {
      if (key.call(k_epoch + 3 * k_s + 20 * k_ms, {limit_of(5, 5 * k_s)}).allowed) {
        made.push_back({k_epoch + 3 * k_s + 20 * k_ms, 1, 1});
        ++more;
      }
    }
    // The sliding window also counts what the key granted in the window before, which no
    // stored window tells apart: conservatively none more.
    CHECK(more == (algorithm == Algorithm::fixed_window ? 1 : 0));
    CHECK(cost_between(made, k_epoch, k_epoch + 5 * k_s) <= 5);

    Key twice(algorithm);
    for (Nanos second : {Nanos{0}, k_s}) {
      for (Nanos offset : {10 * k_ms, 20 * k_ms}) {
        if (algorithm == Algorithm::fixed_window || offset == 10 * k_ms) {
          REQUIRE(twice.call(k_epoch + second + offset, {limit_of(2, k_s)}).allowed);
        }
      }
    }
    Decision longer = twice.call(k_epoch + k_s + 30 * k_ms,
                                 {limit_of(algorithm == Algorithm::fixed_window ? 4 : 2, 2 * k_s)});
    CHECK_FALSE(longer.allowed);
  }
}

TEST_CASE("core::decide windows: a new limit counts every grant since the key's state was made") {
  // The key counts what it granted as long as a store keeps its state, through the moments
  // its limits hold nothing (a store forgets it then only when it is collected, expires or
  // a call names other limits): 1/s at the start of each of four seconds, each finding the
  // key fresh, then 5/5s finds the four in its window.
  for (Algorithm algorithm : {Algorithm::fixed_window, Algorithm::sliding_window}) {
    CAPTURE(algorithm_name(algorithm));
    Key key(algorithm);
    Limit per_second = algorithm == Algorithm::fixed_window ? limit_of(1, k_s) : limit_of(2, k_s);
    for (int second = 0; second < 4; ++second) {
      Nanos now = k_epoch + second * 2 * k_s + k_ms;
      if (second > 0) {
        CHECK(is_fresh(key.state(), key.log(), now));
      }
      REQUIRE(key.call(now, {per_second}).allowed);
    }
    CHECK(key.state().granted == 4);
    // Then 5/10s, whose window holds the four: a cost of 2 would make 6.
    CHECK_FALSE(key.call(k_epoch + 6 * k_s + 2 * k_ms, {limit_of(5, 10 * k_s)}, 2).allowed);
    if (algorithm == Algorithm::fixed_window) {
      CHECK(key.call(k_epoch + 6 * k_s + 3 * k_ms, {limit_of(5, 10 * k_s)}, 1).allowed);
    }
  }
}

TEST_CASE(
    "core::decide sliding-log: a looser waiter never lands on a stricter reservation's instant") {
  // 2/5s taken twice, then a waiter at 2/5s reserves the instant the first grant leaves its
  // window, T. Five waiters at 600/min then come: 600/min has room at T, but a grant there
  // would leave the reservation with 3 in (T - 5 s, T]. They are granted just after it.
  Key key(Algorithm::sliding_log);
  const Limit strict = limit_of(2, 5 * k_s);
  const Limit loose = limit_of(600, k_min);
  REQUIRE(key.call(k_epoch, {strict}).allowed);
  REQUIRE(key.call(k_epoch + k_ms, {strict}).allowed);
  Decision reservation = key.call(k_epoch + 2 * k_ms, {strict}, 1, true);
  REQUIRE(reservation.allowed);
  Nanos t = reservation.grant.at;
  CHECK(t == k_epoch + 5 * k_s);
  for (int i = 0; i < 5; ++i) {
    Decision looser = key.call(k_epoch + k_s + i * k_ms, {loose}, 1, true);
    REQUIRE(looser.allowed);
    CHECK(looser.grant.at == t + 1);
  }
  // A try at the reservation's instant under 600/min is refused by a nanosecond's wait;
  // at 2/5s itself too, as its own window is full.
  Key other(Algorithm::sliding_log);
  REQUIRE(other.call(k_epoch, {limit_of(1, k_s)}).allowed);
  Decision same_instant = other.call(k_epoch, {loose});
  CHECK_FALSE(same_instant.allowed);
  CHECK(same_instant.wait == 1);
}

TEST_CASE(
    "core::decide sliding-log: ten 600/min waiters after a 10/s reservation keep its second") {
  // 10/s: ten grants in its first second, then a waiter reserves the instant the first
  // leaves, T. Ten waiters at 600/min land after T, not on it: (T - 1 s, T] holds 10.
  Key key(Algorithm::sliding_log);
  const Limit strict = limit_of(10, k_s);
  std::vector<Made> made;
  for (int i = 0; i < 10; ++i) {
    REQUIRE(key.call(k_epoch + i * k_ms, {strict}).allowed);
    made.push_back({k_epoch + i * k_ms, 1, 0});
  }
  Decision reservation = key.call(k_epoch + 20 * k_ms, {strict}, 1, true);
  REQUIRE(reservation.allowed);
  Nanos t = reservation.grant.at;
  made.push_back({t, 1, 0});
  for (int i = 0; i < 10; ++i) {
    Decision looser = key.call(k_epoch + 30 * k_ms + i * k_ms, {limit_of(600, k_min)}, 1, true);
    REQUIRE(looser.allowed);
    CHECK(looser.grant.at > t);
    made.push_back({looser.grant.at, 1, 1});
  }
  CHECK(cost_between(made, t - k_s + 1, t + 1) == 10);
  // With room left in the reservation's window, a looser grant may share its instant: 3/5s,
  // 2 taken, then 2 reserved when they leave, T; one unit of 600/min fits at T, the next
  // goes just after.
  Key roomy(Algorithm::sliding_log);
  REQUIRE(roomy.call(k_epoch, {limit_of(3, 5 * k_s)}, 2).allowed);
  Decision late = roomy.call(k_epoch + k_ms, {limit_of(3, 5 * k_s)}, 2, true);
  REQUIRE(late.allowed);
  CHECK(late.grant.at == k_epoch + 5 * k_s);
  Decision shares = roomy.call(k_epoch + 2 * k_ms, {limit_of(600, k_min)}, 1, true);
  REQUIRE(shares.allowed);
  CHECK(shares.grant.at == late.grant.at);
  Decision after = roomy.call(k_epoch + 3 * k_ms, {limit_of(600, k_min)}, 1, true);
  REQUIRE(after.allowed);
  CHECK(after.grant.at == late.grant.at + 1);
}

TEST_CASE("core::read_earlier_version: a window state of schema 4 is read conservatively") {
  KeyState fixed;
  fixed.algorithm = Algorithm::fixed_window;
  fixed.limits = {{limit_of(10, k_s), {k_epoch, 3, 0}}};
  read_earlier_version(fixed);
  CHECK(fixed.granted == k_max_window_count);
  CHECK(fixed.limits[0].slots == std::array<std::int64_t, 3>{k_epoch, 3, k_epoch + k_s - 1});
  // A sliding window's first slot was its window's start: grants anywhere in it.
  KeyState sliding;
  sliding.algorithm = Algorithm::sliding_window;
  sliding.limits = {{limit_of(10, k_s), {k_epoch + 5 * k_s, 3, 2}}};
  read_earlier_version(sliding);
  CHECK(sliding.limits[0].slots == std::array<std::int64_t, 3>{k_epoch + 6 * k_s - 1, 3, 2});
  REQUIRE(within_bounds(sliding));
  // Its own limit decides as before; one first named finds whatever no stored window tells
  // (the first five seconds of its minute) full, what the key granted being unknown.
  MemoryGrantLog log;
  Request request{k_epoch + 5 * k_s + 100 * k_ms, 1, false};
  KeyState first_named = sliding;
  std::vector<Limit> longer{limit_of(100, k_min)};
  CHECK_FALSE(decide(first_named, longer, log, request).allowed);
  std::vector<Limit> same{limit_of(10, k_s)};
  CHECK(decide(sliding, same, log, request).allowed);
  KeyState bucket;
  bucket.algorithm = Algorithm::token_bucket;
  bucket.limits = {{limit_of(10, k_s), {k_epoch, 0, 0}}};
  read_earlier_version(bucket);
  CHECK(bucket.granted == 0);
}
