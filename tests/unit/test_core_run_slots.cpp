// Run slots with explicit times: what admit_run answers, and property tests that no window
// of PERIOD ever overlaps more than N runs (no instant more than N running for -j N),
// whatever the order of starts and exits, with waiters who give up and holders killed.
#include "core/run_slots.hpp"

#include <algorithm>
#include <deque>
#include <doctest/doctest.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace ratelimit::core;

namespace {

constexpr Nanos k_ms = k_nanos_per_milli;
constexpr Nanos k_s = k_nanos_per_second;

RunHolder ended(Nanos started, Nanos end, std::int64_t cost = 1) {
  return {cost, started, end};
}

RunHolder running(Nanos started, std::int64_t cost = 1) {
  return {cost, started, std::nullopt};
}

} // namespace

TEST_CASE("core::admit_run admits while the slots are not all held") {
  std::vector<RunCap> caps{{2, 1 * k_s}};
  std::vector<RunHolder> holders{running(0)};
  CHECK(admit_run(holders, caps, 1, 10 * k_ms).admission == Admission::now);
  CHECK(admit_run(holders, caps, 2, 10 * k_ms).admission == Admission::on_exit);
  CHECK(admit_run({}, caps, 2, 0).admission == Admission::now);
}

TEST_CASE("core::admit_run holds an exited run's slot for the period after its exit") {
  std::vector<RunCap> caps{{2, 1 * k_s}};
  std::vector<RunHolder> holders{ended(0, 300 * k_ms), ended(0, 100 * k_ms)};
  RunAdmission admission = admit_run(holders, caps, 1, 500 * k_ms);
  CHECK(admission.admission == Admission::at);
  CHECK(admission.at == 1100 * k_ms);
  // Both slots for a cost of 2: the later release.
  CHECK(admit_run(holders, caps, 2, 500 * k_ms).at == 1300 * k_ms);
  // From the release time on, the slot is free (the hold is half-open).
  CHECK(admit_run(holders, caps, 1, 1100 * k_ms).admission == Admission::now);
  CHECK(admit_run(holders, caps, 2, 1299 * k_ms).admission == Admission::at);
}

TEST_CASE("core::admit_run with a concurrency cap frees a slot at the exit") {
  std::vector<RunCap> caps{{2, 0}};
  std::vector<RunHolder> holders{running(0), ended(0, 5 * k_ms)};
  CHECK(admit_run(holders, caps, 1, 5 * k_ms).admission == Admission::now);
  holders.push_back(running(5 * k_ms));
  CHECK(admit_run(holders, caps, 1, 6 * k_ms).admission == Admission::on_exit);
}

TEST_CASE("core::admit_run takes the latest answer of several caps, an exit before a time") {
  std::vector<RunCap> caps{{4, 0}, {2, 1 * k_s}, {3, 10 * k_s}};
  std::vector<RunHolder> holders{ended(0, 100 * k_ms), ended(0, 200 * k_ms)};
  RunAdmission admission = admit_run(holders, caps, 1, 300 * k_ms);
  CHECK(admission.admission == Admission::at);
  CHECK(admission.at == 1100 * k_ms);
  CHECK(admission.binding == 1);
  holders.push_back(ended(400 * k_ms, 500 * k_ms));
  admission = admit_run(holders, caps, 1, 600 * k_ms);
  CHECK(admission.at == 10100 * k_ms);
  CHECK(admission.binding == 2);
  holders.push_back(running(600 * k_ms));
  holders.push_back(running(600 * k_ms, 2));
  holders.push_back(running(600 * k_ms));
  admission = admit_run(holders, caps, 1, 700 * k_ms);
  CHECK(admission.admission == Admission::on_exit);
  CHECK(admission.binding == 0);
}

TEST_CASE("core::run_released and run_weight") {
  CHECK_FALSE(run_released(running(0), 0, 10 * k_s));
  CHECK(run_released(ended(0, 1 * k_s), 0, 1 * k_s));
  CHECK_FALSE(run_released(ended(0, 1 * k_s), 2 * k_s, 2 * k_s));
  CHECK(run_released(ended(0, 1 * k_s), 2 * k_s, 3 * k_s));
  std::vector<RunHolder> holders{running(0, 2), ended(0, 1 * k_s), ended(0, 3 * k_s)};
  CHECK(run_weight(holders, {5, 1 * k_s}, 2500 * k_ms) == 3);
  CHECK(run_weight(holders, {5, 0}, 2500 * k_ms) == 3);
  CHECK(run_weight(holders, {5, 0}, 3 * k_s) == 2);
}

namespace {

// A command as it really ran: from `started` to `exited` (killed: when it died).
struct RealRun {
  std::int64_t cost = 1;
  Nanos started = 0;
  Nanos exited = std::numeric_limits<Nanos>::max() / 4;
};

// Each check returns an empty string, or what is wrong.
std::string check_instants(const std::vector<RealRun>& runs, const RunCap& cap) {
  for (const RealRun& at : runs) {
    std::int64_t weight = 0;
    for (const RealRun& run : runs) {
      if (run.started <= at.started && at.started < run.exited + cap.hold) {
        weight += run.cost;
      }
    }
    if (weight > cap.count) {
      return "the instant " + std::to_string(at.started) + " has runs weighing " +
             std::to_string(weight) + " held, for a cap of " + std::to_string(cap.count);
    }
  }
  return {};
}

// No window [w, w + hold) overlaps runs weighing more than the count: the windows that start
// at a run's exit are the fullest.
std::string check_windows(const std::vector<RealRun>& runs, const RunCap& cap) {
  if (cap.hold == 0) {
    return {};
  }
  for (const RealRun& first : runs) {
    Nanos w = first.exited;
    std::int64_t weight = 0;
    for (const RealRun& run : runs) {
      if (run.started < w + cap.hold && run.exited >= w) {
        weight += run.cost;
      }
    }
    if (weight > cap.count) {
      return "the window from " + std::to_string(w) + " overlaps runs weighing " +
             std::to_string(weight) + ", for a cap of " + std::to_string(cap.count);
    }
  }
  return {};
}

struct Waiter {
  std::int64_t cost = 1;
};

struct Simulated {
  RunHolder recorded;   // what the store knows
  std::size_t real = 0; // index into the real runs
  Nanos kill_seen = -1; // killed: when a waiter notices the death
};

// One seeded random run of the queue: arrivals (some not waiting), exits, kills noticed
// late, waiters that give up; the queue is served in arrival order, each head started as
// soon as admit_run says now.
void simulate(std::uint32_t seed, const std::vector<RunCap>& caps) {
  std::mt19937_64 random(seed);
  auto chance = [&](int percent) {
    return std::uniform_int_distribution<int>(0, 99)(random) < percent;
  };
  std::int64_t max_cost = std::numeric_limits<std::int64_t>::max();
  Nanos longest = 0;
  for (const RunCap& cap : caps) {
    max_cost = std::min(max_cost, cap.count);
    longest = std::max(longest, cap.hold);
  }
  std::vector<RealRun> runs;
  std::vector<Simulated> holders;
  std::deque<Waiter> queue;
  Nanos now = 1'000 * k_s;
  int started_later = 0;
  for (int step = 0; step < 400; ++step) {
    now += std::uniform_int_distribution<Nanos>(0, 300 * k_ms)(random);
    for (Simulated& holder : holders) {
      RealRun& real = runs[holder.real];
      if (holder.recorded.ended) {
        continue;
      }
      if (holder.kill_seen >= 0) {
        if (holder.kill_seen <= now) {
          holder.recorded.ended = holder.kill_seen; // noticed dead, at the time of noticing
        }
      } else if (chance(15)) {
        real.exited = now;
        holder.recorded.ended = now;
      } else if (chance(3)) {
        real.exited = now; // killed now, noticed up to a second later
        holder.kill_seen = now + std::uniform_int_distribution<Nanos>(0, 1 * k_s)(random);
      }
    }
    std::erase_if(holders, [&](const Simulated& holder) {
      return run_released(holder.recorded, longest, now);
    });
    if (!queue.empty() && chance(5)) {
      queue.erase(queue.begin() + std::uniform_int_distribution<std::size_t>(0, queue.size() - 1)(
                                      random)); // gave up
    }
    int arrivals = std::uniform_int_distribution<int>(0, 3)(random);
    std::vector<RunHolder> recorded;
    for (int i = 0; i < arrivals; ++i) {
      Waiter waiter{std::uniform_int_distribution<std::int64_t>(1, max_cost)(random)};
      if (chance(20)) {
        // --no-wait: starts only if nobody waits and the caps allow it now.
        recorded.clear();
        for (const Simulated& holder : holders) {
          recorded.push_back(holder.recorded);
        }
        if (queue.empty() &&
            admit_run(recorded, caps, waiter.cost, now).admission == Admission::now) {
          runs.push_back({waiter.cost, now});
          holders.push_back({{waiter.cost, now, std::nullopt}, runs.size() - 1});
        }
        continue;
      }
      queue.push_back(waiter);
    }
    while (!queue.empty()) {
      recorded.clear();
      for (const Simulated& holder : holders) {
        recorded.push_back(holder.recorded);
      }
      RunAdmission admission = admit_run(recorded, caps, queue.front().cost, now);
      if (admission.admission != Admission::now) {
        if (admission.admission == Admission::at) {
          REQUIRE(admission.at > now);
        }
        break;
      }
      runs.push_back({queue.front().cost, now});
      holders.push_back({{queue.front().cost, now, std::nullopt}, runs.size() - 1});
      queue.pop_front();
      ++started_later;
    }
  }
  // It tested something: commands ran, and some of them had to wait.
  REQUIRE(runs.size() > 20);
  REQUIRE(started_later > 0);
  for (const RunCap& cap : caps) {
    INFO("seed " << seed << ", cap " << cap.count << " per " << cap.hold << " ns");
    CHECK(check_instants(runs, cap) == "");
    CHECK(check_windows(runs, cap) == "");
  }
}

} // namespace

TEST_CASE("core::admit_run property: no period overlaps more than N runs (--until-exit)") {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    simulate(seed, {{5, 1 * k_s}});
  }
}

TEST_CASE("core::admit_run property: never more than N running at once (-j N)") {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    simulate(seed, {{2, 0}});
  }
}

TEST_CASE("core::admit_run property: several caps together, costs above 1") {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    simulate(seed, {{4, 0}, {6, 1 * k_s}, {20, 5 * k_s}});
  }
}

TEST_CASE("core::admit_run property: the checks catch an over-admission") {
  // Two runs at once under a cap of 1: the checks must say so, or they check nothing.
  std::vector<RealRun> runs{{1, 0, 100 * k_ms}, {1, 900 * k_ms, 950 * k_ms}};
  CHECK(check_instants(runs, {1, 1 * k_s}) != "");
  CHECK(check_windows(runs, {1, 1 * k_s}) != "");
  CHECK(check_instants(runs, {1, 0}) == "");
}

TEST_CASE("core::admit_run: a pause admits nothing before its end, then the caps decide") {
  std::vector<RunCap> caps{{2, 0}};
  RunAdmission paused = admit_run({}, caps, 1, 100 * k_ms, 500 * k_ms);
  CHECK(paused.admission == Admission::at);
  CHECK(paused.at == 500 * k_ms);
  CHECK(paused.paused_until == 500 * k_ms);
  RunAdmission ended = admit_run({}, caps, 1, 500 * k_ms, 500 * k_ms);
  CHECK(ended.admission == Admission::now);
  CHECK(ended.paused_until == 0);
}
