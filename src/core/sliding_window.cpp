// Sliding window counter: the count of the current aligned window plus the previous
// window's count weighted by how much of it the sliding window still covers:
//   estimate(t) = prev * (1 - elapsed / PERIOD) + curr.
// Comparisons are kept exact by multiplying through by PERIOD.
#include "core/bounds.hpp"
#include "core/rules.hpp"

#include <algorithm>
#include <optional>

namespace ratelimit::core {

namespace {

// slots[0]: the time of the latest grant, whose window is the current one (not before it:
// reservations given back leave it as it was); slots[1]: the cost granted in the current
// window; slots[2]: in the window before it.
Nanos current_window(const LimitState& state, Nanos period) {
  return window_start(state.slots[0], period);
}

struct Counts {
  Nanos start = 0;           // the window that `current` counts
  std::int64_t current = 0;  // cost granted in it
  std::int64_t previous = 0; // cost granted in the window before it
};

// The stored counts, saturated (an earlier version could store more).
Counts stored_counts(const LimitState& state, Nanos period) {
  return {current_window(state, period), std::min(state.slots[1], k_max_window_count),
          std::min(state.slots[2], k_max_window_count)};
}

// The counts as seen from window `start` (not before the stored one).
Counts roll(const LimitState& state, Nanos start, Nanos period) {
  Counts stored = stored_counts(state, period);
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

// Not before the latest grant the state counted; nothing for a fresh state.
std::optional<Nanos> latest_grant(const LimitState& state) {
  if (state.slots[0] != 0) {
    return state.slots[0];
  }
  return std::nullopt;
}

class SlidingWindow final : public Rules {
public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    Nanos period = limit.rate.period;
    // Reservations may already sit in a later window: grants stay in order.
    Nanos time = std::max(now, current_window(state, period));
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
    Nanos period = limit.rate.period;
    Nanos window = window_start(at, period);
    Nanos current = current_window(state, period);
    if (window < current) {
      // A remembered limit counting a grant made under other limits before its latest one:
      // the previous window's count takes it; an older window's is no longer stored, and
      // no estimate from the current window on weighs it.
      if (window == current - period) {
        state.slots[2] = add_window_count(state.slots[2], cost);
      }
      return window;
    }
    Counts counts = roll(state, window, period);
    state.slots = {std::max(state.slots[0], at), add_window_count(counts.current, cost),
                   counts.previous};
    return window;
  }

  void give_back(const Limit& limit, LimitState& state, GrantLog&, Nanos, std::int64_t cost,
                 std::int64_t marker) const override {
    Nanos current = current_window(state, limit.rate.period);
    if (marker == current) {
      state.slots[1] = std::max<std::int64_t>(0, state.slots[1] - cost);
    } else if (marker == current - limit.rate.period) {
      state.slots[2] = std::max<std::int64_t>(0, state.slots[2] - cost);
    }
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog&, Nanos now) const override {
    Nanos period = limit.rate.period;
    Nanos current = window_start(now, period);
    Nanos stored = current_window(state, period);
    if (stored > current) {
      return {0, stored + 2 * period - now};
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

  std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored, Nanos,
                                    std::int64_t granted) const override {
    // Every grant of the key is at or before the latest grant a stored state knows of, and
    // the new current window is the one that holds it (the new limit grants nothing
    // before). What the new current and previous windows hold is at most the count of any
    // stored window, or pair of windows, that covers the stretch (each state counts every
    // grant the key made in its two windows), and at most what the key has granted since
    // its state was made: the grants no stored window can place (windows before the stored
    // ones, reservations beyond them) are all assumed in each of the two.
    std::optional<Nanos> latest;
    for (const LimitState& state : stored) {
      if (auto grant = latest_grant(state)) {
        latest = std::max(latest.value_or(*grant), *grant);
      }
    }
    if (!latest) {
      return {};
    }
    auto at_most = [&](Nanos from, Nanos until) {
      std::int64_t most = granted;
      for (const LimitState& state : stored) {
        Nanos length = state.limit.rate.period;
        Counts counts = stored_counts(state, length);
        Nanos start = counts.start;
        if (start <= from && until <= start + length) {
          most = std::min(most, counts.current);
        }
        if (start - length <= from && until <= start) {
          most = std::min(most, counts.previous);
        }
        if (start - length <= from && until <= start + length) {
          most = std::min(most, counts.current + counts.previous);
        }
      }
      return most;
    };
    Nanos window = window_start(*latest, limit.rate.period);
    return {*latest, at_most(window, *latest + 1), at_most(window - limit.rate.period, window)};
  }

  bool remembers_unnamed() const override { return true; }

  // As long as the key's state, remembered windows, even empty, count every grant from
  // then on, which their limit, named again, could not find exactly in the others.
  bool keeps_remembered(const LimitState&, GrantLog&, Nanos) const override { return true; }

  bool counts_granted() const override { return true; }

  void read_earlier_version(LimitState& state) const override {
    // slots[0] was the current window's start: its grants may lie anywhere in it.
    if (state.slots[0] != 0 && state.slots[1] > 0) {
      state.slots[0] += state.limit.rate.period - 1;
    }
  }
};

} // namespace

const Rules& sliding_window_rules() {
  static const SlidingWindow rules;
  return rules;
}

} // namespace ratelimit::core
