// Sliding window counter: the count of the current aligned window plus the previous
// window's count weighted by how much of it the sliding window still covers:
//   estimate(t) = prev * (1 - elapsed / PERIOD) + curr.
// Comparisons are kept exact by multiplying through by PERIOD.
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

struct Counts {
  Nanos start = 0;           // the window that `current` counts
  std::int64_t current = 0;  // cost granted in it
  std::int64_t previous = 0; // cost granted in the window before it
};

// The counts as seen from window `start` (not before the stored one).
Counts roll(const LimitState& state, Nanos start, Nanos period) {
  Counts stored{state.slots[0], state.slots[1], state.slots[2]};
  if (start == stored.start) {
    return stored;
  }
  if (start == stored.start + period) {
    return {start, 0, stored.current};
  }
  return {start, 0, 0};
}

// prev * (PERIOD - elapsed) / PERIOD, rounded up.
std::int64_t weighted_previous(const Counts& counts, Nanos elapsed, Nanos period) {
  return ceil_div(Wide{counts.previous} * (period - elapsed), period);
}

// A count that no limit can take more of: what a carried window may hold, unknown.
constexpr std::int64_t k_unknown = k_max_count;

class SlidingWindow final : public Rules {
public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    Nanos period = limit.rate.period;
    // Reservations may already sit in a later window: grants stay in order.
    Nanos time = std::max(now, state.slots[0]);
    for (;;) {
      Counts counts = roll(state, window_start(time, period), period);
      std::int64_t room = limit.rate.count - cost - counts.current;
      if (room >= 0) {
        // With room for the whole previous count, any weight admits; this also keeps
        // room * PERIOD / prev below PERIOD, inside int64.
        if (counts.previous <= room) {
          return {time};
        }
        // The first elapsed time e with prev * (PERIOD - e) <= room * PERIOD.
        Nanos first = period - static_cast<Nanos>(Wide{room} * period / counts.previous);
        return {std::max(time, counts.start + first)};
      }
      // This window is full whatever the weight: from the next one, this window's count
      // becomes the previous count and room is at least `count - cost`.
      time = counts.start + period;
    }
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog&, Nanos, Nanos at,
                    std::int64_t cost) const override {
    Counts counts = roll(state, window_start(at, limit.rate.period), limit.rate.period);
    counts.current += cost;
    state.slots = {counts.start, counts.current, counts.previous};
    return counts.start;
  }

  void give_back(const Limit& limit, LimitState& state, GrantLog&, Nanos, std::int64_t cost,
                 std::int64_t marker) const override {
    if (marker == state.slots[0]) {
      state.slots[1] = std::max<std::int64_t>(0, state.slots[1] - cost);
    } else if (marker == state.slots[0] - limit.rate.period) {
      state.slots[2] = std::max<std::int64_t>(0, state.slots[2] - cost);
    }
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog&, Nanos now) const override {
    Nanos period = limit.rate.period;
    Nanos current = window_start(now, period);
    if (state.slots[0] > current) {
      return {0, state.slots[0] + 2 * period - now};
    }
    Counts counts = roll(state, current, period);
    std::int64_t estimate = counts.current + weighted_previous(counts, now - current, period);
    Nanos reset_after = 0;
    if (counts.current > 0) {
      reset_after = current + 2 * period - now;
    } else if (counts.previous > 0) {
      reset_after = current + period - now;
    }
    return {std::max<std::int64_t>(0, limit.rate.count - estimate), reset_after};
  }

  std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored,
                                    Nanos now) const override {
    // Each stored count may lie anywhere in its window (reservations may wait in it): the
    // new current window is the one that holds the end of the latest stored window with
    // grants, and the new limit grants nothing before it. A stored count counts in that
    // window if its window reaches into it, in the one before if it overlaps that one (in
    // both, when both).
    Nanos period = limit.rate.period;
    Nanos latest = now;
    for (const LimitState& state : stored) {
      if (state.slots[1] > 0) {
        latest = std::max(latest, state.slots[0] + state.limit.rate.period - 1);
      } else if (state.slots[2] > 0) {
        latest = std::max(latest, state.slots[0] - 1);
      }
    }
    Nanos window = window_start(latest, period);
    std::int64_t current = 0;
    std::int64_t previous = 0;
    for (const LimitState& state : stored) {
      Nanos start = state.slots[0];
      Nanos length = state.limit.rate.period;
      auto overlaps = [](Nanos from, Nanos until, Nanos other_from, Nanos other_until) {
        return from < other_until && until > other_from;
      };
      // [start, start + length) holds slots[1], [start - length, start) slots[2].
      std::int64_t in_current =
          (start + length > window ? state.slots[1] : 0) + (start > window ? state.slots[2] : 0);
      std::int64_t in_previous =
          (overlaps(start, start + length, window - period, window) ? state.slots[1] : 0) +
          (overlaps(start - length, start, window - period, window) ? state.slots[2] : 0);
      current = std::max(current, in_current);
      previous = std::max(previous, in_previous);
      // Reservations that filled windows before the stored two are no longer counted, and
      // a full count with reservations in later windows may stand for more than its N,
      // which a carried state cannot tell: a new window that reaches into them counts as
      // holding any number (as the previous window, it still weighs).
      bool full = state.slots[1] >= state.limit.rate.count && start > window_start(now, length);
      Nanos unknown_from = std::min(window_start(now, length), full ? start : start - length);
      Nanos unknown_until = full ? start + length : start - length;
      if (state.slots[1] > 0 && unknown_until > unknown_from) {
        if (overlaps(unknown_from, unknown_until, window, window + period)) {
          current = std::max(current, k_unknown);
        }
        if (overlaps(unknown_from, unknown_until, window - period, window)) {
          previous = std::max(previous, k_unknown);
        }
      }
    }
    return {window, current, previous};
  }
};

} // namespace

const Rules& sliding_window_rules() {
  static const SlidingWindow rules;
  return rules;
}

} // namespace ratelimit::core
