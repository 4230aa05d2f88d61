// Sliding log: exact. A grant at t is allowed when the cost granted in (t - PERIOD, t]
// plus its own cost is at most N. Grants are kept in a GrantLog with cumulative costs, so
// the cost in the window is `total - cumulative_through(t - PERIOD)`.
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

class SlidingLog final : public Rules {
  // slots[0]: time of the last grant; slots[1]: cumulative cost of all grants (the last
  // entry's); slots[2]: cumulative cost of the entries already forgotten.
  static Nanos last(const LimitState& state) { return state.slots[0]; }
  static std::int64_t total(const LimitState& state) { return state.slots[1]; }
  static std::int64_t forgotten(const LimitState& state) { return state.slots[2]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog& log, Nanos now,
                std::int64_t cost) const override {
    Nanos time = std::max(now, last(state));
    // The window must have slid past every entry up to this cumulative cost.
    std::int64_t must_leave = total(state) + cost - limit.rate.count;
    if (must_leave <= forgotten(state)) {
      return {time};
    }
    std::optional<Nanos> leaving = log.time_reaching(limit.rate.period, must_leave);
    if (!leaving) {
      // Unreachable while the log and the state agree; if they do not, once the last
      // grant has left the window nothing can be in it.
      return {std::max(time, last(state) + limit.rate.period)};
    }
    return {std::max(time, *leaving + limit.rate.period)};
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog& log, Nanos now, Nanos at,
                    std::int64_t cost) const override {
    Nanos period = limit.rate.period;
    // Entries that can never be inside a window again go, so a log holds one period.
    Nanos horizon = now - period;
    if (auto cumulative = log.cumulative_through(period, horizon)) {
      state.slots[2] = std::max(state.slots[2], *cumulative);
      log.forget_through(period, horizon);
    }
    state.slots[0] = std::max(last(state), at);
    state.slots[1] += cost;
    log.append(period, state.slots[0], state.slots[1]);
    return state.slots[1];
  }

  void give_back(const Limit& limit, LimitState& state, GrantLog& log, Nanos at, std::int64_t cost,
                 std::int64_t) const override {
    // The entry is found by its time, not by the cumulative cost `take` returned: giving
    // back an earlier entry shifts the cumulative cost of every later one. Grants at one
    // time count in the same windows, so the last entry at `at` stands for this one when it
    // costs as much; when grants of other costs share the time, nothing is returned.
    Nanos period = limit.rate.period;
    std::optional<std::int64_t> through = log.cumulative_through(period, at);
    if (!through || *through <= forgotten(state)) {
      return; // forgotten: it left every window long ago
    }
    std::int64_t before =
        std::max(forgotten(state), log.cumulative_through(period, at - 1).value_or(0));
    std::int64_t previous =
        std::max(forgotten(state), log.cumulative_before(period, *through).value_or(0));
    if (*through - before < cost || *through - previous != cost) {
      return;
    }
    log.remove(period, *through, cost);
    state.slots[1] -= cost;
    state.slots[0] = log.last_time(period).value_or(0);
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog& log,
              Nanos now) const override {
    Nanos period = limit.rate.period;
    if (last(state) > now) {
      return {0, last(state) + period - now};
    }
    std::int64_t before =
        std::max(forgotten(state), log.cumulative_through(period, now - period).value_or(0));
    std::int64_t used = total(state) - before;
    Nanos reset_after = used > 0 ? last(state) + period - now : 0;
    return {std::max<std::int64_t>(0, limit.rate.count - used), reset_after};
  }
};

} // namespace

const Rules& sliding_log_rules() {
  static const SlidingLog rules;
  return rules;
}

} // namespace ratelimit::core
