// Leaky bucket as a queue with a constant output (virtual scheduling): grants leave
// exactly one emission interval apart, a request of cost C takes C intervals, and the
// state is the next free output time. The queue holds the grants after `now`: with
// `burst` of them waiting ahead, a request overflows it and is refused at once; a `try`
// is granted only when the output is free now.
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

class LeakyBucket final : public Rules {
  // slots[0]: the next free output time.
  static Nanos& next(LimitState& state) { return state.slots[0]; }
  static Nanos next(const LimitState& state) { return state.slots[0]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    // Requests queued ahead at `now`: ceil((next - now) / interval) - 1 must leave room for
    // `cost` in a queue of `burst`.
    Nanos interval = limit.rate.emission_interval();
    return {std::max(now, next(state)), next(state) - (limit.burst - cost + 1) * interval};
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog&, Nanos, Nanos at,
                    std::int64_t cost) const override {
    next(state) = std::max(next(state), at) + cost * limit.rate.emission_interval();
    return next(state);
  }

  void give_back(const Limit& limit, LimitState& state, GrantLog&, Nanos, std::int64_t cost,
                 std::int64_t marker) const override {
    // A slot with others scheduled behind it stays a gap: moving them would reorder grants.
    if (next(state) == marker) {
      next(state) -= cost * limit.rate.emission_interval();
    }
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog&, Nanos now) const override {
    // Remaining is the room in the queue, what `earliest` would still accept: the grant
    // leaving at `now` or before is not waiting in it.
    Nanos pending = std::max<Nanos>(0, next(state) - now);
    std::int64_t queued =
        std::max<std::int64_t>(0, ceil_div(pending, limit.rate.emission_interval()) - 1);
    return {std::max<std::int64_t>(0, limit.burst - queued), pending};
  }
};

} // namespace

const Rules& leaky_bucket_rules() {
  static const LeakyBucket rules;
  return rules;
}

} // namespace ratelimit::core
