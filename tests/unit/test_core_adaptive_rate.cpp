#include "core/adaptive_rate.hpp"

#include <doctest/doctest.h>
#include <limits>

using namespace ratelimit::core;

namespace {

constexpr Nanos k_s = k_nanos_per_second;
constexpr Nanos k_ms = k_nanos_per_milli;
// 2023-11-14, a plausible clock.
constexpr Nanos k_t0 = 1'700'000'000 * k_s;
constexpr std::int64_t k_per_s = k_micro_per_second;
const Rate k_ceiling{50, k_s};

AdaptiveState throttled(const AdaptiveState& state, Nanos at, const Rate& ceiling = k_ceiling) {
  return adapt(state, ceiling, AdaptiveEvent::throttled, at);
}

// `count` successes spread evenly over [from, to).
AdaptiveState succeeded(AdaptiveState state, Nanos from, Nanos to, std::int64_t count,
                        const Rate& ceiling = k_ceiling) {
  for (std::int64_t i = 0; i < count; ++i) {
    state = adapt(state, ceiling, AdaptiveEvent::succeeded,
                  from + static_cast<Nanos>(Wide{to - from} * i / count));
  }
  return state;
}

// A key that learned 5/s at k_t0 + 2 s: ten successes in two seconds, then a throttle.
AdaptiveState cut_from_five_per_second() {
  AdaptiveState state = succeeded({}, k_t0, k_t0 + 2 * k_s, 10);
  return throttled(state, k_t0 + 2 * k_s);
}

} // namespace

TEST_CASE("core::adapt keeps a key at its ceiling until a throttle") {
  AdaptiveState state = succeeded({}, k_t0, k_t0 + 10 * k_s, 500);
  CHECK(state.max_rate == 0);
  CHECK(effective_rate(state, k_ceiling, k_t0 + 10 * k_s) == k_ceiling);
  CHECK(effective_micro_rate(state, k_ceiling, k_t0) == 50 * k_per_s);
}

TEST_CASE("core::adapt cuts to 0.7 of the rate when it has measured nothing yet") {
  AdaptiveState state = succeeded({}, k_t0, k_t0 + 100 * k_ms, 5);
  state = throttled(state, k_t0 + 100 * k_ms);
  CHECK(state.max_rate == 50 * k_per_s);
  CHECK(state.cut_at == k_t0 + 100 * k_ms);
  CHECK(effective_micro_rate(state, k_ceiling, k_t0 + 100 * k_ms) == 35 * k_per_s);
  CHECK(effective_rate(state, k_ceiling, k_t0 + 100 * k_ms) == Rate{35 * k_per_s, 1'000'000 * k_s});
}

TEST_CASE("core::adapt cuts to 0.7 of the successes measured, below the rate granted") {
  AdaptiveState state = cut_from_five_per_second();
  CHECK(state.max_rate == 5 * k_per_s);
  CHECK(effective_micro_rate(state, k_ceiling, k_t0 + 2 * k_s) == 3'500'000);
  // Successes faster than the key grants are not believed beyond it.
  AdaptiveState fast = succeeded({}, k_t0, k_t0 + 2 * k_s, 400);
  CHECK(throttled(fast, k_t0 + 2 * k_s).max_rate == 50 * k_per_s);
}

TEST_CASE("core::effective_micro_rate grows back as a cubic: flat at W_max, then to the ceiling") {
  AdaptiveState state = cut_from_five_per_second();
  Nanos cut = state.cut_at;
  Nanos recovery = adaptive_recovery(state.max_rate);
  CHECK(recovery == 6400 * k_ms); // 32 grants at 5/s
  CHECK(effective_micro_rate(state, k_ceiling, cut + recovery) == 5 * k_per_s);
  // Concave before K, convex after: it spends its time near the rate that failed.
  CHECK(effective_micro_rate(state, k_ceiling, cut + 3200 * k_ms) == 4'812'500);
  CHECK(effective_micro_rate(state, k_ceiling, cut + 9600 * k_ms) == 5'187'500);
  // W_max (1 + 0.3 ((t - K) / K)^3) = 7/s at t - K = 6.4 (4/3)^(1/3) s, about 7.04 s.
  CHECK(effective_micro_rate(state, k_ceiling, cut + 13400 * k_ms) < 7 * k_per_s);
  CHECK(effective_micro_rate(state, k_ceiling, cut + 13500 * k_ms) > 7 * k_per_s);
  std::int64_t last = 0;
  for (Nanos t = cut; t < cut + 40 * k_s; t += 100 * k_ms) {
    std::int64_t rate = effective_micro_rate(state, k_ceiling, t);
    CHECK(rate >= last);
    last = rate;
  }
  // Back at the ceiling after K (1 + 30^(1/3)), about 26.3 s, and exactly it.
  CHECK(effective_micro_rate(state, k_ceiling, cut + 26 * k_s) < 50 * k_per_s);
  CHECK(effective_rate(state, k_ceiling, cut + 27 * k_s) == k_ceiling);
  CHECK(effective_rate(state, k_ceiling, std::numeric_limits<Nanos>::max()) == k_ceiling);
}

TEST_CASE("core::adapt counts throttles within a round of the last cut as one cut") {
  AdaptiveState state = succeeded({}, k_t0, k_t0 + 100 * k_ms, 5);
  state = throttled(state, k_t0 + 100 * k_ms);
  AdaptiveState once = state;
  // Eight workers' throttles for one overload, then successes: the cut stands.
  for (int worker = 1; worker < 8; ++worker) {
    state = throttled(state, k_t0 + 100 * k_ms + worker * 50 * k_ms);
  }
  CHECK(state.max_rate == once.max_rate);
  CHECK(state.cut_at == once.cut_at);
  // The round after a cut to 35/s is a second (eight grants at 35/s take 0.23 s).
  CHECK(throttled(state, k_t0 + 1099 * k_ms).cut_at == once.cut_at);
  // Then the rate has grown back from 35/s; with no success measured since, it is W_max.
  AdaptiveState again = throttled(state, k_t0 + 1100 * k_ms);
  CHECK(again.cut_at == k_t0 + 1100 * k_ms);
  CHECK(again.max_rate == effective_micro_rate(state, k_ceiling, k_t0 + 1100 * k_ms));
  CHECK(again.max_rate < 50 * k_per_s);
}

TEST_CASE("core::adapt's round lengthens with a slow rate: eight grants at the rate cut to") {
  const Rate ceiling{10, 60 * k_s};
  AdaptiveState state = throttled({}, k_t0, ceiling);
  // Cut to 7/min: eight grants take 68.6 s.
  CHECK(throttled(state, k_t0 + 68 * k_s, ceiling).cut_at == k_t0);
  CHECK(throttled(state, k_t0 + 69 * k_s, ceiling).cut_at == k_t0 + 69 * k_s);
}

TEST_CASE("core::adapt never cuts below the floor: 1/100 of the ceiling, or one a minute") {
  CHECK(adaptive_floor(k_ceiling) == 500'000);
  CHECK(adaptive_floor(Rate{10, k_s}) == k_per_s / 10);
  CHECK(adaptive_floor(Rate{1, k_s}) == k_per_s / 60);
  CHECK(adaptive_floor(Rate{1, 3600 * k_s}) == micro_rate(Rate{1, 3600 * k_s}));
  AdaptiveState state;
  Nanos now = k_t0;
  // A throttle every 100 ms for 200 s: a cut every round, each from the rate grown since.
  for (int i = 0; i < 2000; ++i) {
    state = throttled(state, now);
    CHECK(effective_micro_rate(state, k_ceiling, now) >= 500'000);
    now += 100 * k_ms;
  }
  CHECK(effective_micro_rate(state, k_ceiling, state.cut_at) == 500'000);
}

TEST_CASE("core::effective_rate follows a change of ceiling and keeps what was learned") {
  AdaptiveState state = cut_from_five_per_second();
  Nanos later = state.cut_at + adaptive_recovery(state.max_rate);
  CHECK(effective_micro_rate(state, Rate{100, k_s}, later) == 5 * k_per_s);
  CHECK(effective_rate(state, Rate{2, k_s}, later) == Rate{2, k_s});
  // A lower ceiling lowers the floor with it: 3/s cuts to no less than 1/min.
  CHECK(effective_micro_rate(state, Rate{3, k_s}, state.cut_at) == 3'000'000);
  CHECK(throttled(state, later, Rate{3, k_s}).max_rate == 3 * k_per_s);
}

TEST_CASE("core::adapt reads a clock stepped back as the latest time it saw") {
  AdaptiveState state = cut_from_five_per_second();
  Nanos cut = state.cut_at;
  state = adapt(state, k_ceiling, AdaptiveEvent::succeeded, cut + 10 * k_s);
  std::int64_t rate = effective_micro_rate(state, k_ceiling, cut + 10 * k_s);
  // An hour back: the rate does not fall back towards the cut.
  AdaptiveState stepped = adapt(state, k_ceiling, AdaptiveEvent::succeeded, cut - 3600 * k_s);
  CHECK(stepped.clock == cut + 10 * k_s);
  CHECK(effective_micro_rate(stepped, k_ceiling, cut - 3600 * k_s) == rate);
  // A throttle stamped in the past cuts now, not in the past.
  AdaptiveState cut_again = throttled(stepped, cut - 3600 * k_s);
  CHECK(cut_again.cut_at == cut + 10 * k_s);
  // And one stamped back within the round of that cut is grouped with it.
  CHECK(throttled(cut_again, cut).cut_at == cut + 10 * k_s);
}

TEST_CASE("core::adapt forgets successes of long ago: an idle hour measures nothing") {
  AdaptiveState state = succeeded({}, k_t0, k_t0 + k_s, 40);
  state = throttled(state, k_t0 + 3601 * k_s);
  CHECK(state.max_rate == 50 * k_per_s);
  // A lone worker's success every 10 s is measured over its calls, not over one second,
  // also once the oldest are folded.
  const Rate ceiling{1, k_s};
  AdaptiveState slow = succeeded({}, k_t0, k_t0 + 3000 * k_s, 300, ceiling);
  slow = throttled(slow, k_t0 + 3000 * k_s, ceiling);
  CHECK(slow.max_rate > 90'000);
  CHECK(slow.max_rate < 110'000);
}

TEST_CASE("core::adapt and effective_rate hold at the extreme rates and times") {
  const Rate fastest{k_max_count, 1};
  const Rate slowest{1, k_max_duration};
  constexpr Nanos k_end = std::numeric_limits<Nanos>::max();
  for (const Rate& ceiling : {fastest, slowest, k_ceiling}) {
    CAPTURE(ceiling.count);
    AdaptiveState state = succeeded({}, 1, k_end / 2, 100, ceiling);
    for (Nanos at : {Nanos{1}, k_end / 2, k_end - 1, k_end}) {
      state = throttled(state, at, ceiling);
      for (Nanos query : {Nanos{0}, at, k_end}) {
        std::int64_t rate = effective_micro_rate(state, ceiling, query);
        CHECK(rate >= adaptive_floor(ceiling));
        CHECK(rate <= micro_rate(ceiling));
        Rate limit = effective_rate(state, ceiling, query);
        CHECK(limit.count >= 1);
        CHECK(limit.count <= k_max_count);
        CHECK(limit.period >= 1);
      }
    }
  }
  CHECK(micro_rate(fastest) == k_max_adaptive_rate);
  CHECK(micro_rate(slowest) == 1);
  CHECK(adaptive_recovery(1) > k_least_recovery);
}
