// Property tests: seeded random sequences of try, wait (reserve) and cancel (give back) on
// one key, for every algorithm, checking the bound each algorithm promises on the grants
// that stand: their reservation times, cancelled ones removed. The windows and the sliding
// log are called with limits that change between calls (a strict short period, a loose long
// one), as two scripts sharing a key do: each grant is checked against the limits of its
// own call counting every grant the key made since a store last forgot it (when it was
// fresh), and the key must stay readable and never refuse for longer than its limits can
// explain.
#include "core/bounds.hpp"
#include "core/rules.hpp"

#include "core_test_key.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <random>
#include <set>
#include <string>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

struct GrantRecord {
  Nanos at = 0;
  std::int64_t cost = 0;
  std::size_t set = 0;   // the limits of its call, an index into the run's sets
  std::size_t epoch = 0; // how many times a store had forgotten the key before it
};

std::vector<GrantRecord> sorted(std::vector<GrantRecord> grants) {
  std::stable_sort(grants.begin(), grants.end(),
                   [](const GrantRecord& a, const GrantRecord& b) { return a.at < b.at; });
  return grants;
}

// Each check returns an empty string, or what is wrong.

// Sliding log: at most N in any half-open window (t - PERIOD, t].
std::string check_sliding_log(const Limit& limit, const std::vector<GrantRecord>& grants) {
  std::int64_t inside = 0;
  std::size_t first = 0;
  for (std::size_t j = 0; j < grants.size(); ++j) {
    inside += grants[j].cost;
    while (grants[first].at <= grants[j].at - limit.rate.period) {
      inside -= grants[first].cost;
      ++first;
    }
    // Grants sharing this time come next: count them all before judging.
    if (j + 1 < grants.size() && grants[j + 1].at == grants[j].at) {
      continue;
    }
    if (inside > limit.rate.count) {
      return "sliding-log: " + std::to_string(inside) + " in the period ending at " +
             std::to_string(grants[j].at);
    }
  }
  return {};
}

// Fixed window: at most N per window aligned to the epoch.
std::string check_fixed_window(const Limit& limit, const std::vector<GrantRecord>& grants) {
  std::int64_t inside = 0;
  Nanos window = std::numeric_limits<Nanos>::min();
  for (const GrantRecord& grant : grants) {
    Nanos start = window_start(grant.at, limit.rate.period);
    if (start != window) {
      window = start;
      inside = 0;
    }
    inside += grant.cost;
    if (inside > limit.rate.count) {
      return "fixed-window: " + std::to_string(inside) + " in the window at " +
             std::to_string(window);
    }
  }
  return {};
}

// Token bucket: in any closed interval [s, u], at most burst + (u - s) / interval (the
// interval is PERIOD/N rounded up, so this is within burst + rate * (u - s)). With prefix
// sums S: S_j - S_{i-1} <= burst + (at_j - at_i) / interval for all i <= j, kept exact by
// multiplying through by the interval, with a running minimum over i.
std::string check_token_bucket(const Limit& limit, const std::vector<GrantRecord>& grants) {
  Wide interval = limit.rate.emission_interval();
  Wide before = 0; // S_{i-1}
  Wide lowest = std::numeric_limits<std::int64_t>::max();
  for (const GrantRecord& grant : grants) {
    lowest = std::min(lowest, before * interval - grant.at);
    before += grant.cost;
    Wide excess = (before * interval - grant.at) - lowest;
    if (excess > Wide{limit.burst} * interval) {
      return "token-bucket: more than burst + rate * t before " + std::to_string(grant.at);
    }
  }
  return {};
}

// Leaky bucket: a grant of cost C occupies C intervals; the next comes after them.
std::string check_leaky_bucket(const Limit& limit, const std::vector<GrantRecord>& grants) {
  for (std::size_t i = 1; i < grants.size(); ++i) {
    Nanos gap = grants[i].at - grants[i - 1].at;
    if (gap < grants[i - 1].cost * limit.rate.emission_interval()) {
      return "leaky-bucket: grants " + std::to_string(gap) + " ns apart at " +
             std::to_string(grants[i].at);
    }
  }
  return {};
}

// Sliding window: at each grant, the estimate with every grant of its window up to it and
// the previous window's count weighted exactly is within N.
std::string check_sliding_window(const Limit& limit, const std::vector<GrantRecord>& grants) {
  Nanos period = limit.rate.period;
  Nanos window = std::numeric_limits<Nanos>::min();
  std::int64_t current = 0;
  std::int64_t previous = 0;
  for (std::size_t j = 0; j < grants.size(); ++j) {
    Nanos start = window_start(grants[j].at, period);
    if (start != window) {
      previous = start == window + period ? current : 0;
      window = start;
      current = 0;
    }
    current += grants[j].cost;
    if (j + 1 < grants.size() && grants[j + 1].at == grants[j].at) {
      continue;
    }
    Wide elapsed = grants[j].at - start;
    Wide scaled = Wide{current} * period + Wide{previous} * (period - elapsed);
    if (scaled > Wide{limit.rate.count} * period) {
      return "sliding-window: the estimate exceeds N at " + std::to_string(grants[j].at);
    }
    if (current > limit.rate.count) {
      return "sliding-window: more than N in the window at " + std::to_string(window);
    }
  }
  return {};
}

std::string check(Algorithm algorithm, const Limit& limit, const std::vector<GrantRecord>& grants) {
  switch (algorithm) {
  case Algorithm::token_bucket:
    return check_token_bucket(limit, grants);
  case Algorithm::leaky_bucket:
    return check_leaky_bucket(limit, grants);
  case Algorithm::fixed_window:
    return check_fixed_window(limit, grants);
  case Algorithm::sliding_window:
    return check_sliding_window(limit, grants);
  case Algorithm::sliding_log:
    return check_sliding_log(limit, grants);
  }
  return "unknown algorithm";
}

// Fixed and sliding window, at the decision of `grant` under `limit` of its call: what the
// aligned window holding it (and, weighted, the one before) holds of the grants made since a
// store last forgot the key and not cancelled, whatever the limits of their calls. In any
// order: called at every grant, it neither copies nor sorts them.
std::string check_window_at_grant(Algorithm algorithm, const Limit& limit,
                                  const std::vector<GrantRecord>& records,
                                  const std::vector<bool>& cancelled, const GrantRecord& grant) {
  Nanos period = limit.rate.period;
  Nanos start = window_start(grant.at, period);
  std::int64_t current = 0;
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const GrantRecord& other = records[i];
    if (!cancelled[i] && other.epoch == grant.epoch) {
      current += window_start(other.at, period) == start ? other.cost : 0;
      previous += window_start(other.at, period) == start - period ? other.cost : 0;
    }
  }
  if (current > limit.rate.count) {
    return std::string(algorithm_name(algorithm)) + ": " + std::to_string(current) +
           " in the window at " + std::to_string(start);
  }
  Wide scaled = Wide{current} * period + Wide{previous} * (period - (grant.at - start));
  if (algorithm == Algorithm::sliding_window && scaled > Wide{limit.rate.count} * period) {
    return "sliding-window: the estimate exceeds N at " + std::to_string(grant.at);
  }
  return {};
}

// Sliding log, over every grant standing at the end: each leaves at most N of each limit
// of its call in (t - PERIOD, t], counting the grants made since a store last forgot the
// key before it, those made later under other limits included.
std::string check_sliding_log_protected(const std::vector<std::vector<Limit>>& sets,
                                        const std::vector<GrantRecord>& grants) {
  // Grants by time; the ones of a later epoch are all later than those of an earlier one.
  std::vector<GrantRecord> by_time = sorted(grants);
  std::vector<std::int64_t> through(by_time.size() + 1, 0); // cost of the first i
  for (std::size_t i = 0; i < by_time.size(); ++i) {
    through[i + 1] = through[i] + by_time[i].cost;
  }
  std::vector<std::size_t> epoch_first(by_time.size(), 0);
  for (std::size_t i = 1; i < by_time.size(); ++i) {
    epoch_first[i] = by_time[i].epoch == by_time[i - 1].epoch ? epoch_first[i - 1] : i;
  }
  auto first_after = [&](Nanos time) {
    return static_cast<std::size_t>(
        std::upper_bound(by_time.begin(), by_time.end(), time,
                         [](Nanos t, const GrantRecord& g) { return t < g.at; }) -
        by_time.begin());
  };
  for (std::size_t i = 0; i < by_time.size(); ++i) {
    const GrantRecord& grant = by_time[i];
    for (const Limit& limit : sets[grant.set]) {
      std::size_t from = std::max(first_after(grant.at - limit.rate.period), epoch_first[i]);
      std::int64_t inside = through[first_after(grant.at)] - through[from];
      if (inside > limit.rate.count) {
        return "sliding-log: " + std::to_string(inside) + " in the period of " +
               std::to_string(limit.rate.count) + "/" + std::to_string(limit.rate.period) +
               " ending at " + std::to_string(grant.at);
      }
    }
  }
  return {};
}

// Whether grants of `algorithm` are always made in order: a new grant is never before one
// still standing. Token buckets and sliding-window counters may let a later request use
// what a cancelled reservation returned ahead of reservations behind it, which their
// bounds allow.
bool keeps_order(Algorithm algorithm) {
  return algorithm == Algorithm::leaky_bucket || algorithm == Algorithm::fixed_window ||
         algorithm == Algorithm::sliding_log;
}

// Whether the order holds whatever limits the calls name: a fixed window lets a call grant
// under its own limits ahead of a reservation made under others; the sliding log's one log
// keeps every grant in order.
bool shares_state(Algorithm algorithm) {
  return rules_for(algorithm).shares_state();
}

// The limits of one run: one or two, with periods that do not divide each other evenly.
std::vector<Limit> random_limits(Algorithm algorithm, std::mt19937_64& random) {
  auto pick = [&](std::initializer_list<std::int64_t> values) {
    std::uniform_int_distribution<std::size_t> index(0, values.size() - 1);
    return *(values.begin() + index(random));
  };
  auto make = [&](std::int64_t count, Nanos period) {
    Limit limit{Rate{count, period}, count};
    if (takes_burst(algorithm)) {
      limit.burst = pick({1, count, count, 2 * count + 1});
    }
    return limit;
  };
  std::int64_t count = pick({1, 3, 10, 25});
  Nanos period = pick({700 * k_ms, k_s, 2500 * k_ms});
  std::vector<Limit> limits{make(count, period)};
  if (random() % 2 == 0) {
    limits.push_back(make(count * pick({2, 3, 7}), period * pick({3, 7, 11}) + 13 * k_ms));
  }
  return limits;
}

// Whether calls on a key of `algorithm` change their limits in these runs: the windows' and
// the sliding log's, whose promises hold over every grant on the key, whatever its limits.
bool changes_limits(Algorithm algorithm) {
  return !takes_burst(algorithm);
}

// The limit sets of a run's calls: `limits`, then for the windows and the sliding log a
// looser limit of a longer period (as 600/min beside 10/s) and a stricter one of a shorter
// period, their windows aligned differently.
std::vector<std::vector<Limit>> limit_sets(Algorithm algorithm, const std::vector<Limit>& limits) {
  std::vector<std::vector<Limit>> sets{limits};
  if (changes_limits(algorithm)) {
    const Rate& rate = limits.front().rate;
    std::int64_t loose = rate.count * 12;
    std::int64_t strict = std::max<std::int64_t>(1, rate.count / 2);
    sets.push_back({limit_of(loose, rate.period * 6 + 7 * k_ms)});
    sets.push_back({limit_of(strict, rate.period / 2 + 3 * k_ms)});
  }
  return sets;
}

Nanos longest_period(const std::vector<Limit>& limits) {
  Nanos longest = 0;
  for (const Limit& limit : limits) {
    longest = std::max(longest, limit.rate.period);
  }
  return longest;
}

struct Run {
  std::vector<GrantRecord> standing;
  int tries = 0;
  int reservations = 0;
  int cancels = 0;
  int grants = 0;
};

// One seeded run of `steps` random requests; checks the bounds every 500 steps and at the
// end, and the order of grants as they are made. With changing limits, each grant as it is
// made too, and what a refusal says: the key's state stays readable (core::within_bounds)
// and it refuses for no longer than its own limits can hold a slot back, two periods of the
// call's longest beyond the latest grant or now (a carried state never locks a key for an
// earlier limit's period).
Run simulate(Algorithm algorithm, std::uint64_t seed, int steps) {
  std::mt19937_64 random(seed);
  std::vector<Limit> limits = random_limits(algorithm, random);
  std::vector<std::vector<Limit>> sets = limit_sets(algorithm, limits);
  TestKey key(algorithm, limits);
  Nanos shortest = std::numeric_limits<Nanos>::max();
  for (const Limit& limit : limits) {
    shortest = std::min(shortest, limit.rate.period);
  }
  Nanos interval = limits[0].rate.emission_interval();
  INFO("algorithm ", std::string(algorithm_name(algorithm)), ", seed ", seed, ", limits ",
       limits.size(), ": ", limits[0].rate.count, "/", limits[0].rate.period, " burst ",
       limits[0].burst);

  struct Outstanding {
    Decision decision;
    std::size_t index; // in `records`
  };
  std::vector<GrantRecord> records;
  std::vector<bool> cancelled;
  std::vector<Outstanding> outstanding;
  Run run;
  Nanos now = k_t0 + static_cast<Nanos>(random() % static_cast<std::uint64_t>(shortest));
  std::multiset<Nanos> standing_times;
  std::size_t set = 0;
  std::size_t epoch = 0;
  Nanos latest_grant = std::numeric_limits<Nanos>::min();

  // Each run has its own mix: how often requests cost more than 1, how often waiters give
  // up, and whether the one giving up is the latest (half of the runs), the oldest or any;
  // and how often a call names other limits.
  const unsigned big_costs = 1 + random() % 5;  // in 10
  const unsigned cancelling = 1 + random() % 3; // in 10
  const unsigned which_cancels = random() % 4;
  const unsigned switching = changes_limits(algorithm) ? 1 + random() % 4 : 0; // in 10

  auto standing_grants = [&] {
    std::vector<GrantRecord> standing;
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (!cancelled[i]) {
        standing.push_back(records[i]);
      }
    }
    return sorted(standing);
  };
  auto check_all = [&](int step) {
    std::vector<GrantRecord> standing = standing_grants();
    if (sets.size() == 1) {
      for (const Limit& limit : limits) {
        std::string problem = check(algorithm, limit, standing);
        INFO("step ", step, ", limit ", limit.rate.count, "/", limit.rate.period);
        REQUIRE_MESSAGE(problem.empty(), problem);
      }
    } else if (algorithm == Algorithm::sliding_log) {
      std::string problem = check_sliding_log_protected(sets, standing);
      INFO("step ", step);
      REQUIRE_MESSAGE(problem.empty(), problem);
    }
    return standing;
  };

  for (int step = 0; step < steps; ++step) {
    // Time moves on by nothing, less than an interval, up to a period, or more; now and
    // then the system clock steps back.
    switch (random() % 10) {
    case 0:
    case 1:
    case 2:
      break;
    case 3:
    case 4:
    case 5:
    case 6:
      now += static_cast<Nanos>(random() % static_cast<std::uint64_t>(interval));
      break;
    case 7:
    case 8:
      now += static_cast<Nanos>(random() % static_cast<std::uint64_t>(shortest));
      break;
    default:
      if (random() % 20 == 0) {
        now -= static_cast<Nanos>(random() % static_cast<std::uint64_t>(2 * shortest));
      } else {
        now += static_cast<Nanos>(random() % static_cast<std::uint64_t>(3 * shortest));
      }
      break;
    }
    if (switching > 0 && random() % 10 < switching) {
      set = static_cast<std::size_t>(random() % sets.size());
    }
    std::int64_t capacity = std::numeric_limits<std::int64_t>::max();
    for (const Limit& limit : sets[set]) {
      capacity = std::min(capacity, limit.capacity(algorithm));
    }
    std::int64_t cost =
        random() % 10 < big_costs
            ? 1 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(capacity))
            : 1;
    if (random() % 10 < cancelling && !outstanding.empty()) {
      // Cancel a reservation, usually before its time, the way an interrupted waiter does,
      // naming the limits it was granted under.
      std::size_t pick = which_cancels <= 1   ? outstanding.size() - 1
                         : which_cancels == 2 ? 0
                                              : random() % outstanding.size();
      Outstanding gone = outstanding[pick];
      outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(pick));
      Nanos when = std::min(now, gone.decision.grant.at);
      if (random() % 8 == 0) {
        when = now; // or after it: the waiter overslept
      }
      key.limits() = sets[records[gone.index].set];
      key.cancel(when, gone.decision);
      cancelled[gone.index] = true;
      standing_times.erase(standing_times.find(gone.decision.grant.at));
      ++run.cancels;
      REQUIRE(within_bounds(key.state()));
      continue;
    }
    key.limits() = sets[set];
    if (!key.state().limits.empty() && key.fresh(now) &&
        !std::equal(key.state().limits.begin(), key.state().limits.end(), sets[set].begin(),
                    sets[set].end(),
                    [](const LimitState& s, const Limit& l) { return s.limit == l; })) {
      // The key holds nothing and the call names other limits: a store forgets it, as gc
      // and Redis expiry would, and what it granted before counts for no limit any more.
      ++epoch;
      key.state() = KeyState{algorithm, 0, {}};
      key.log() = MemoryGrantLog{};
    }
    bool reserve = random() % 2 == 0;
    Nanos max_wait = std::numeric_limits<Nanos>::max();
    if (reserve && random() % 3 == 0) {
      max_wait = static_cast<Nanos>(random() % static_cast<std::uint64_t>(2 * shortest));
    }
    Decision decision = reserve ? key.reserve(now, cost, max_wait) : key.attempt(now, cost);
    REQUIRE(within_bounds(key.state()));
    if (reserve) {
      ++run.reservations;
    } else {
      ++run.tries;
    }
    if (!decision.allowed) {
      CHECK(decision.wait > 0);
      if (changes_limits(algorithm)) {
        Nanos held_back = std::max<Nanos>(0, latest_grant - decision.now);
        INFO("step ", step, ", refused for ", decision.wait, " ns");
        REQUIRE(decision.wait <= held_back + 2 * longest_period(sets[set]) + 1);
      }
      continue;
    }
    ++run.grants;
    REQUIRE(decision.grant.at == decision.now + decision.wait);
    REQUIRE(decision.now >= now);
    REQUIRE((reserve || decision.wait == 0));
    REQUIRE(decision.wait <= max_wait);
    if (keeps_order(algorithm) && !standing_times.empty() &&
        (sets.size() == 1 || shares_state(algorithm))) {
      // Never before a grant still standing (the latest one made may have been cancelled).
      REQUIRE(decision.grant.at >= *standing_times.rbegin());
    }
    standing_times.insert(decision.grant.at);
    latest_grant = std::max(latest_grant, decision.grant.at);
    records.push_back({decision.grant.at, cost, set, epoch});
    cancelled.push_back(false);
    if (reserve) {
      outstanding.push_back({decision, records.size() - 1});
    }
    if (sets.size() > 1 && algorithm != Algorithm::sliding_log) {
      for (const Limit& limit : sets[set]) {
        std::string problem =
            check_window_at_grant(algorithm, limit, records, cancelled, records.back());
        INFO("step ", step, ", limit ", limit.rate.count, "/", limit.rate.period);
        REQUIRE_MESSAGE(problem.empty(), problem);
      }
    }
    if (step % 500 == 499) {
      check_all(step);
    }
  }
  run.standing = check_all(steps);
  return run;
}

void simulate_many(Algorithm algorithm) {
  int grants = 0;
  int cancels = 0;
  int denials = 0;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    Run run = simulate(algorithm, seed * 7919 + static_cast<std::uint64_t>(algorithm), 2000);
    grants += run.grants;
    cancels += run.cancels;
    denials += run.tries + run.reservations - run.grants;
  }
  // The runs exercised every path: grants, refusals and cancellations, many of each.
  CHECK(grants > 3000);
  CHECK(denials > 3000);
  CHECK(cancels > 500);
}

} // namespace

TEST_CASE("core::token_bucket property: never more than burst + rate * t in any interval t") {
  simulate_many(Algorithm::token_bucket);
}

TEST_CASE("core::leaky_bucket property: grants never closer than PERIOD/N per unit of cost") {
  simulate_many(Algorithm::leaky_bucket);
}

TEST_CASE("core::fixed_window property: never more than N per aligned window") {
  simulate_many(Algorithm::fixed_window);
}

TEST_CASE("core::sliding_window property: the exact estimate at every grant is within N") {
  simulate_many(Algorithm::sliding_window);
}

TEST_CASE("core::sliding_log property: never more than N in any period (t - PERIOD, t]") {
  simulate_many(Algorithm::sliding_log);
}

TEST_CASE("core::property checks catch over-admission") {
  // The checks themselves, on hand-made grant lists one unit over each bound.
  Limit limit{Rate{2, k_s}, 2};
  std::vector<GrantRecord> log_over{{k_t0, 1}, {k_t0 + 500 * k_ms, 1}, {k_t0 + k_s - 1, 1}};
  CHECK_FALSE(check_sliding_log(limit, log_over).empty());
  log_over[2].at = k_t0 + k_s;
  CHECK(check_sliding_log(limit, log_over).empty());
  std::vector<GrantRecord> fixed_over{{k_t0 + 1, 2}, {k_t0 + k_s - 1, 1}};
  CHECK_FALSE(check_fixed_window(limit, fixed_over).empty());
  fixed_over[1].at = k_t0 + k_s;
  CHECK(check_fixed_window(limit, fixed_over).empty());
  // Burst 2, a token every 500 ms: 2 at 0, 1 at 500 ms is fine, a 4th by 1 s is not.
  std::vector<GrantRecord> bucket{{k_t0, 2}, {k_t0 + 500 * k_ms, 1}, {k_t0 + 999 * k_ms, 1}};
  CHECK_FALSE(check_token_bucket(limit, bucket).empty());
  bucket[2].at = k_t0 + k_s;
  CHECK(check_token_bucket(limit, bucket).empty());
  std::vector<GrantRecord> leaky{{k_t0, 2}, {k_t0 + 999 * k_ms, 1}};
  CHECK_FALSE(check_leaky_bucket(limit, leaky).empty());
  leaky[1].at = k_t0 + k_s;
  CHECK(check_leaky_bucket(limit, leaky).empty());
  // 2 in one second, then 0.25 s into the next: 2 * 0.75 + 1 = 2.5 > 2.
  std::vector<GrantRecord> window{{k_t0, 2}, {k_t0 + 1250 * k_ms, 1}};
  CHECK_FALSE(check_sliding_window(limit, window).empty());
  window[1].at = k_t0 + 1500 * k_ms;
  CHECK(check_sliding_window(limit, window).empty());
}
