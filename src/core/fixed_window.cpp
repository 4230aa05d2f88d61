// Fixed window: a counter per window of PERIOD aligned to the epoch, so 10/min means
// calendar minutes. Only the latest window with grants is stored; reservations fill the
// first window with room, in order.
#include "core/bounds.hpp"
#include "core/rules.hpp"

#include <algorithm>
#include <optional>

namespace ratelimit::core {

namespace {

class FixedWindow final : public Rules {
  // slots[0]: start of the latest window with grants; slots[1]: the cost granted in it;
  // slots[2]: the time of the latest grant (0 in a state written before it was kept).
  static Nanos& start(LimitState& state) { return state.slots[0]; }
  static Nanos start(const LimitState& state) { return state.slots[0]; }
  static std::int64_t& count(LimitState& state) { return state.slots[1]; }
  static std::int64_t count(const LimitState& state) { return state.slots[1]; }

  // Not before the latest grant the state counted; nothing for a fresh state.
  static std::optional<Nanos> latest_grant(const LimitState& state) {
    if (state.slots[2] != 0) {
      return state.slots[2];
    }
    return std::nullopt;
  }

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
    if (window < start(state)) {
      // A remembered limit counting a grant made under other limits in one of its windows
      // before its latest: that window's count is no longer stored, and this limit never
      // grants there again.
      return window;
    }
    if (window != start(state)) {
      start(state) = window;
      count(state) = 0;
    }
    count(state) = add_window_count(count(state), cost);
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

  std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored, Nanos,
                                    std::int64_t granted) const override {
    // Every grant of the key is at or before the latest grant a stored state knows of, and
    // the new window is the one that holds it (the new limit grants nothing before). What
    // the new window holds up to that grant is at most the count of any stored window that
    // covers the whole stretch (each state counts every grant the key made in its window),
    // and at most what the key has granted since its state was made: the grants that no
    // stored window can place (earlier windows of shorter periods, reservations beyond
    // them) are all assumed in the new window.
    std::optional<Nanos> latest;
    for (const LimitState& state : stored) {
      if (auto grant = latest_grant(state)) {
        latest = std::max(latest.value_or(*grant), *grant);
      }
    }
    if (!latest) {
      return {};
    }
    Nanos window = window_start(*latest, limit.rate.period);
    std::int64_t used = granted;
    for (const LimitState& state : stored) {
      if (start(state) <= window && *latest < start(state) + state.limit.rate.period) {
        used = std::min(used, count(state));
      }
    }
    return {window, used, *latest};
  }

  bool remembers_unnamed() const override { return true; }

  // As long as the key's state, a remembered window, even empty, counts every grant from
  // then on, which its limit, named again, could not find exactly in the others.
  bool keeps_remembered(const LimitState&, GrantLog&, Nanos) const override { return true; }

  bool counts_granted() const override { return true; }

  void read_earlier_version(LimitState& state) const override {
    // Written before the latest grant was kept: its grants may lie anywhere in the window.
    if (state.slots[2] == 0 && start(state) != 0) {
      state.slots[2] = start(state) + state.limit.rate.period - 1;
    }
  }
};

} // namespace

const Rules& fixed_window_rules() {
  static const FixedWindow rules;
  return rules;
}

} // namespace ratelimit::core
