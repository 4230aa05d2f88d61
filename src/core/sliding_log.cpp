// Sliding log: exact. A grant at t is allowed when the cost granted in (t - PERIOD, t]
// plus its own cost is at most N. Grants are kept in a GrantLog with cumulative costs, so
// the cost in the window is `total - cumulative_through(t - PERIOD)`. The key has one log,
// whatever its calls' limits: each limit counts its own window in it, and its slots are
// the same for every limit (`shares_state`).
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

class SlidingLog final : public Rules {
  // slots[0]: time of the last grant; slots[1]: cumulative cost of all grants (the last
  // entry's); slots[2]: cumulative cost of the entries already forgotten. `take` and
  // `give_back` get a limit whose period is the log's retention (KeyState::log_period).
  static Nanos last(const LimitState& state) { return state.slots[0]; }
  static std::int64_t total(const LimitState& state) { return state.slots[1]; }
  static std::int64_t forgotten(const LimitState& state) { return state.slots[2]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog& log, Nanos now,
                std::int64_t cost) const override {
    Nanos time = std::max(now, last(state));
    // The window must have slid past every entry up to this cumulative cost. Forgotten
    // grants are at or before the oldest entry kept, so that entry stands for them.
    std::int64_t must_leave = total(state) + cost - limit.rate.count;
    if (must_leave <= 0) {
      return {time};
    }
    std::optional<Nanos> leaving = log.time_reaching(must_leave);
    if (!leaving) {
      // Unreachable while the log and the state agree; if they do not, once the last
      // grant has left the window nothing can be in it.
      return {std::max(time, last(state) + limit.rate.period)};
    }
    return {std::max(time, *leaving + limit.rate.period)};
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog& log, Nanos now, Nanos at,
                    std::int64_t cost) const override {
    // Entries that can never be inside a window again go, so the log holds one retention;
    // the last of them stays, to bound the times of those before it.
    Nanos horizon = now - limit.rate.period;
    if (auto cumulative = log.cumulative_through(horizon)) {
      state.slots[2] = std::max(state.slots[2], *cumulative);
      log.forget_before(*cumulative);
    }
    state.slots[0] = std::max(last(state), at);
    state.slots[1] += cost;
    log.append(state.slots[0], state.slots[1]);
    return state.slots[1];
  }

  void give_back(const Limit&, LimitState& state, GrantLog& log, Nanos at, std::int64_t cost,
                 std::int64_t) const override {
    // The entry is found by its time, not by the cumulative cost `take` returned: giving
    // back an earlier entry shifts the cumulative cost of every later one. Grants at one
    // time count in the same windows, so the last entry at `at` stands for this one when it
    // costs as much; when grants of other costs share the time, nothing is returned.
    std::optional<std::int64_t> through = log.cumulative_through(at);
    if (!through || *through <= forgotten(state)) {
      return; // forgotten: it left every window long ago
    }
    std::int64_t before = std::max(forgotten(state), log.cumulative_through(at - 1).value_or(0));
    std::int64_t previous = std::max(forgotten(state), log.cumulative_before(*through).value_or(0));
    if (*through - before < cost || *through - previous != cost) {
      return;
    }
    log.remove(*through, cost);
    state.slots[1] -= cost;
    state.slots[0] = log.last_time().value_or(0);
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog& log,
              Nanos now) const override {
    Nanos period = limit.rate.period;
    if (last(state) > now) {
      return {0, last(state) + period - now};
    }
    // A window that reaches before the oldest entry kept may hold every grant forgotten.
    std::int64_t before = log.cumulative_through(now - period).value_or(0);
    std::int64_t used = total(state) - before;
    Nanos reset_after = used > 0 ? last(state) + period - now : 0;
    return {std::max<std::int64_t>(0, limit.rate.count - used), reset_after};
  }

  std::array<std::int64_t, 3> carry(const Limit&, std::span<const LimitState> stored, Nanos,
                                    std::int64_t) const override {
    if (stored.empty()) {
      return {};
    }
    return stored.front().slots;
  }

  bool shares_state() const override { return true; }

  // A limit of an earlier call, as the key's slots were after it: slots[0] is not before
  // its latest grant. A grant judged under it at t left at most its N in (t - PERIOD, t];
  // a later grant lands at or after the last one, so the only one it could overfill is at
  // that very time, when the grant is a reservation, or when the clock has not moved.
  bool remembers_unnamed() const override { return true; }

  bool keeps_remembered(const LimitState& remembered, GrantLog&, Nanos now) const override {
    return last(remembered) >= now; // an earlier time no grant can reach any more
  }

  Nanos protect(const LimitState& remembered, const LimitState& state, GrantLog& log, Nanos at,
                std::int64_t cost) const override {
    Nanos latest = last(remembered);
    if (latest < at ||
        (latest == at && usage(remembered.limit, state, log, at).remaining >= cost)) {
      return at;
    }
    // Just after it, where its windows end; beyond `at` only once the log's last grant
    // was given back (its grants may then lie anywhere up to that time).
    return latest + 1;
  }
};

} // namespace

const Rules& sliding_log_rules() {
  static const SlidingLog rules;
  return rules;
}

} // namespace ratelimit::core
