// Fixed window: a counter per window of PERIOD aligned to the epoch, so 10/min means
// calendar minutes. Only the latest window with grants is stored; reservations fill the
// first window with room, in order.
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

class FixedWindow final : public Rules {
  // slots[0]: start of the latest window with grants; slots[1]: the cost granted in it;
  // slots[2]: the time of the latest grant (0 in a state written before it was kept).
  static Nanos& start(LimitState& state) { return state.slots[0]; }
  static Nanos start(const LimitState& state) { return state.slots[0]; }
  static std::int64_t& count(LimitState& state) { return state.slots[1]; }
  static std::int64_t count(const LimitState& state) { return state.slots[1]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    if (start(state) < window_start(now, limit.rate.period)) {
      return {now};
    }
    if (count(state) + cost <= limit.rate.count) {
      return {std::max(now, start(state))};
    }
    return {start(state) + limit.rate.period};
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog&, Nanos, Nanos at,
                    std::int64_t cost) const override {
    Nanos window = window_start(at, limit.rate.period);
    if (window != start(state)) {
      start(state) = window;
      count(state) = 0;
    }
    count(state) += cost;
    state.slots[2] = std::max(state.slots[2], at);
    return window;
  }

  void give_back(const Limit&, LimitState& state, GrantLog&, Nanos, std::int64_t cost,
                 std::int64_t marker) const override {
    // An older window's count is no longer stored: its grant cannot be returned.
    if (start(state) == marker) {
      count(state) = std::max<std::int64_t>(0, count(state) - cost);
    }
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog&, Nanos now) const override {
    Nanos period = limit.rate.period;
    Nanos current = window_start(now, period);
    if (start(state) > current) {
      // Reservations moved on to a later window because this one was full; its count is no
      // longer stored, so nothing is known to be left in it until that window ends, even
      // once those reservations are all given back.
      return {0, start(state) + period - now};
    }
    if (start(state) < current || count(state) == 0) {
      return {limit.rate.count, 0};
    }
    return {std::max<std::int64_t>(0, limit.rate.count - count(state)),
            start(state) + period - now};
  }

  std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored,
                                    Nanos now) const override {
    // A stored window's grants lie between its start and its latest grant (or `now`, or
    // its start when it lies ahead: the bounds before the latest grant was kept). The new
    // window is the one that holds the latest of them; every stored count that may lie in
    // it counts there, and the new limit grants nothing before it.
    Nanos period = limit.rate.period;
    auto latest_of = [&](const LimitState& state) {
      return std::max({now, start(state), state.slots[2]});
    };
    Nanos latest = now;
    Nanos latest_grant = 0;
    for (const LimitState& state : stored) {
      if (count(state) > 0) {
        latest = std::max(latest, latest_of(state));
        latest_grant = std::max(latest_grant, state.slots[2]);
      }
    }
    Nanos window = window_start(latest, period);
    std::int64_t used = 0;
    for (const LimitState& state : stored) {
      if (count(state) > 0 && start(state) < window + period && latest_of(state) >= window) {
        used = std::max(used, count(state));
      }
      // Reservations that filled the stored limit's windows between now and its latest one
      // are no longer counted: if the new window reaches into them, it is full. So is it
      // when it overlaps a full stored window with reservations still ahead: a full count
      // may stand for more than its limit's N, which a carried state cannot tell.
      if (count(state) > 0 && start(state) > window_start(now, state.limit.rate.period) &&
          window < start(state)) {
        used = std::max(used, limit.rate.count);
      }
      if (count(state) >= state.limit.rate.count && state.slots[2] > now &&
          start(state) < window + period && latest_of(state) >= window) {
        used = std::max(used, limit.rate.count);
      }
    }
    return {window, used, latest_grant};
  }
};

} // namespace

const Rules& fixed_window_rules() {
  static const FixedWindow rules;
  return rules;
}

} // namespace ratelimit::core
