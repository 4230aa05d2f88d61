#include "sim/profiles.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"

#include "core/decide.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using core::Algorithm;
using core::k_nanos_per_milli;
using core::k_nanos_per_second;
using core::Nanos;

namespace {

constexpr Nanos k_ms = k_nanos_per_milli;

sim::Settings settings(std::int64_t count, Nanos period, sim::Mode mode = sim::Mode::try_now,
                       std::int64_t burst = 0) {
  return {{core::Limit{{count, period}, burst > 0 ? burst : count}}, mode};
}

std::vector<sim::Arrival> trace(std::string_view text) {
  auto parsed = sim::parse_trace(text);
  REQUIRE(parsed.ok());
  return parsed->arrivals;
}

std::vector<sim::Arrival> boundary_profile(Nanos duration) {
  auto generated = sim::generate(
      {sim::Profile::boundary, core::Rate{10, k_nanos_per_second}, duration, {1, 1}, 1});
  REQUIRE(generated.ok());
  return *generated;
}

} // namespace

TEST_CASE("sim::peak_per_period finds the fullest half-open period") {
  std::vector<sim::Arrival> events = {{0, 1}, {500 * k_ms, 2}, {990 * k_ms, 3}, {1000 * k_ms, 4}};
  // [0, 1s) holds 1 + 2 + 3; [0.5s, 1.5s) holds 2 + 3 + 4.
  CHECK(sim::peak_per_period(events, k_nanos_per_second) == 9);
  CHECK(sim::peak_per_period(events, 11 * k_ms) == 7);
  CHECK(sim::peak_per_period(events, 10 * k_ms) == 4);
  // Exactly a period apart is never inside one period.
  std::vector<sim::Arrival> apart = {{0, 5}, {k_nanos_per_second, 5}, {2 * k_nanos_per_second, 5}};
  CHECK(sim::peak_per_period(apart, k_nanos_per_second) == 5);
  CHECK(sim::peak_per_period(apart, k_nanos_per_second + 1) == 10);
  CHECK(sim::peak_per_period({}, k_nanos_per_second) == 0);
}

TEST_CASE("sim::run: the boundary example, fixed-window 2N in one period, sliding-log N") {
  auto arrivals = boundary_profile(2 * k_nanos_per_second);
  auto limit = settings(10, k_nanos_per_second);
  sim::Run fixed = sim::run(Algorithm::fixed_window, arrivals, limit);
  CHECK(fixed.admitted == 20);
  CHECK(fixed.denied == 0);
  CHECK(fixed.peak_per_period == 20);
  sim::Run log = sim::run(Algorithm::sliding_log, arrivals, limit);
  CHECK(log.admitted == 10);
  CHECK(log.denied == 10);
  CHECK(log.peak_per_period == 10);
  // The first ten, before the boundary, go through; none of the ten after it.
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    CHECK((log.granted_at[i] != sim::k_denied) == (i < 10));
  }
  sim::Run counter = sim::run(Algorithm::sliding_window, arrivals, limit);
  CHECK(counter.peak_per_period == 10);
  // A full bucket of 10 plus the token refilled in the 100 ms to the boundary.
  sim::Run bucket = sim::run(Algorithm::token_bucket, arrivals, limit);
  CHECK(bucket.admitted == 11);
}

TEST_CASE("sim::run: leaky-bucket in wait mode spaces grants PERIOD/N apart") {
  auto arrivals = trace("0\n0\n0\n0\n0\n0.05\n0.05\n");
  sim::Run run = sim::run(Algorithm::leaky_bucket, arrivals,
                          settings(10, k_nanos_per_second, sim::Mode::wait));
  REQUIRE(run.admitted == 7);
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    CHECK(run.granted_at[i] == static_cast<Nanos>(i) * 100 * k_ms);
  }
  CHECK(run.max_wait == 550 * k_ms);
  // Waits 0, 100, 200, 300, 400, 450 and 550 ms.
  CHECK(run.mean_wait == 2000 * k_ms / 7);
  CHECK(run.peak_per_period == 7);
}

TEST_CASE("sim::run: a full leaky-bucket queue refuses even in wait mode") {
  auto arrivals = trace("0\n0\n0\n0\n");
  sim::Run run = sim::run(Algorithm::leaky_bucket, arrivals,
                          settings(10, k_nanos_per_second, sim::Mode::wait, 2));
  CHECK(run.admitted == 3); // one leaving now, two queued behind it
  CHECK(run.denied == 1);
}

TEST_CASE("sim::run: try mode never waits") {
  auto arrivals = boundary_profile(10 * k_nanos_per_second);
  for (Algorithm algorithm : core::k_all_algorithms) {
    sim::Run run = sim::run(algorithm, arrivals, settings(10, k_nanos_per_second));
    CHECK(run.max_wait == 0);
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      REQUIRE((run.granted_at[i] == sim::k_denied || run.granted_at[i] == arrivals[i].at));
    }
  }
}

TEST_CASE("sim::run honours the costs of a trace") {
  // 3 + 3 + 3 fit in 10, a fourth 3 does not, a 1 does.
  auto arrivals = trace("0 3\n0.1 3\n0.2 3\n0.3 3\n0.4 1\n");
  for (Algorithm algorithm :
       {Algorithm::fixed_window, Algorithm::sliding_log, Algorithm::sliding_window}) {
    CAPTURE(core::algorithm_name(algorithm));
    sim::Run run = sim::run(algorithm, arrivals, settings(10, k_nanos_per_second));
    CHECK(run.admitted == 4);
    CHECK(run.denied == 1);
    CHECK(run.granted_at[3] == sim::k_denied);
    CHECK(run.peak_per_period == 10);
  }
  // The bucket has refilled 3 in 300 ms: it lets 13 through within one period.
  sim::Run bucket = sim::run(Algorithm::token_bucket, arrivals, settings(10, k_nanos_per_second));
  CHECK(bucket.admitted == 5);
  CHECK(bucket.peak_per_period == 13);
  // The same number of requests at cost 1 all go through.
  sim::Run cheap = sim::run(Algorithm::fixed_window, trace("0\n0.1\n0.2\n0.3\n0.4\n"),
                            settings(10, k_nanos_per_second));
  CHECK(cheap.admitted == 5);
  CHECK(cheap.peak_per_period == 5);
}

TEST_CASE("sim::run measures state bytes: fixed per algorithm, the log's peak for sliding-log") {
  auto arrivals = trace("0\n0.1\n0.2\n0.3\n0.4\n0.5\n");
  auto limit = settings(4, k_nanos_per_second);
  CHECK(sim::run(Algorithm::token_bucket, arrivals, limit).state_bytes == 8);
  CHECK(sim::run(Algorithm::leaky_bucket, arrivals, limit).state_bytes == 8);
  CHECK(sim::run(Algorithm::fixed_window, arrivals, limit).state_bytes == 16);
  CHECK(sim::run(Algorithm::sliding_window, arrivals, limit).state_bytes == 24);
  // Four grants fill the log; the rest are denied.
  CHECK(sim::run(Algorithm::sliding_log, arrivals, limit).state_bytes == 24 + 4 * 16);
  sim::Settings two = limit;
  two.limits.push_back({{100, 60 * k_nanos_per_second}, 100});
  CHECK(sim::run(Algorithm::fixed_window, arrivals, two).state_bytes == 32);
  // One log for both limits.
  CHECK(sim::run(Algorithm::sliding_log, arrivals, two).state_bytes == 48 + 4 * 16);
}

TEST_CASE("sim::run gives the decisions of direct core::decide calls (cross-check)") {
  auto arrivals = trace("0 1\n0.01 2\n0.01 1\n0.2 4\n0.45 1\n0.999 3\n1 1\n1.001 2\n1.5 5\n"
                        "1.5 1\n2.25 2\n2.26 1\n2.9999 4\n3 3\n3.0001 1\n4.5 2\n4.5 2\n6 5\n");
  for (sim::Mode mode : {sim::Mode::try_now, sim::Mode::wait}) {
    for (Algorithm algorithm : core::k_all_algorithms) {
      CAPTURE(core::algorithm_name(algorithm));
      CAPTURE(sim::mode_name(mode));
      sim::Settings limits{
          {core::Limit{{5, k_nanos_per_second}, 6}, core::Limit{{12, 3 * k_nanos_per_second}, 12}},
          mode};
      sim::Run run = sim::run(algorithm, arrivals, limits);
      core::KeyState state;
      state.algorithm = algorithm;
      core::MemoryGrantLog log;
      for (std::size_t i = 0; i < arrivals.size(); ++i) {
        core::Request request;
        request.now = arrivals[i].at;
        request.cost = arrivals[i].cost;
        request.reserve = mode == sim::Mode::wait;
        core::Decision decision = core::decide(state, limits.limits, log, request);
        CHECK(run.granted_at[i] == (decision.allowed ? decision.grant.at : sim::k_denied));
      }
    }
  }
}

TEST_CASE("sim::compare builds series on one scale and recommends from the shape") {
  auto arrivals = boundary_profile(10 * k_nanos_per_second);
  auto limit = settings(10, k_nanos_per_second);
  sim::Comparison comparison =
      sim::compare(arrivals, core::k_all_algorithms, limit, 10 * k_nanos_per_second);
  REQUIRE(comparison.runs.size() == 5);
  CHECK(comparison.bucket_width == 250 * k_ms);
  for (const sim::Run& run : comparison.runs) {
    REQUIRE(run.admissions.size() == 40);
    std::int64_t total = 0;
    for (std::int64_t value : run.admissions) {
      total += value;
    }
    CHECK(total == run.admitted);
  }
  // Fixed window: 10 in [0.75s, 1s) and 10 in [1s, 1.25s).
  CHECK(comparison.runs[2].admissions[3] == 10);
  CHECK(comparison.runs[2].admissions[4] == 10);
  CHECK(comparison.recommendation.algorithm == Algorithm::sliding_log);
  CHECK(comparison.recommendation.reason.find("fixed-window admitted 20 within one 1s") !=
        std::string::npos);
}

TEST_CASE("sim::sparkline draws zero as the lowest block and the maximum as a full one") {
  std::vector<std::int64_t> series = {0, 1, 14, 15, 50, 100};
  CHECK(sim::sparkline(series, 100) == "▁▂▂▃▅█");
  CHECK(sim::sparkline(std::vector<std::int64_t>{0, 0}, 0) == "▁▁");
}
