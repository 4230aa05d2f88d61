// Leaky bucket as a queue with a constant output (virtual scheduling): grants leave one
// emission interval apart per unit, and the state is the next free output time, the last
// grant's time plus its cost in intervals. A request of cost C leaves C - 1 intervals
// after that, so that two grants are (C1 + C2 - 1) intervals apart and no PERIOD holds
// more than N units of cost: grants g_1 < ... < g_m within a PERIOD are at least
// (total - 1) intervals apart, and PERIOD is at most N intervals. The queue holds the
// grants after `now`: with `burst` units of them waiting ahead, a request overflows it and
// is refused at once, whatever its own cost; a `try` is granted only when its slot is now.
#include "core/rules.hpp"

#include <algorithm>
#include <optional>

namespace ratelimit::core {

namespace {

class LeakyBucket final : public Rules {
  // slots[0]: the next free output time.
  static Nanos& next(LimitState& state) { return state.slots[0]; }
  static Nanos next(const LimitState& state) { return state.slots[0]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    // Units queued ahead at `now`, ceil((next - now) / interval) - 1, must be fewer than
    // `burst`.
    Nanos interval = limit.rate.emission_interval();
    return {std::max(now, next(state) + (cost - 1) * interval),
            next(state) - limit.burst * interval};
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
    Nanos interval = limit.rate.emission_interval();
    Nanos pending = std::max<Nanos>(0, next(state) - now);
    std::int64_t queued = std::max<std::int64_t>(0, ceil_div(pending, interval) - 1);
    // Fresh once a request of the largest cost, N, would leave now, as it would from a new
    // key: until then the last grant still spaces it (`earliest`).
    return {std::max<std::int64_t>(0, limit.burst - queued),
            std::max<Nanos>(0, next(state) + (limit.rate.count - 1) * interval - now)};
  }

  std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored,
                                    Nanos now, std::int64_t) const override {
    // As the token bucket's: a stored limit at most as fast as the new one bounds the next
    // free time at the new rate (every grant was spaced at least as far apart as the new
    // rate asks, and the last one, at most `next - interval`, keeps its cost in new
    // intervals); of those bounds the least holds. A faster one bounds nothing: its units
    // queued, all of them, are kept at the new rate, and of those the most. The key
    // remembers the limits it converts from, so a limit is converted once, when first named.
    Nanos to = limit.rate.emission_interval();
    std::optional<Nanos> bound;
    Nanos kept = 0;
    for (const LimitState& state : stored) {
      Nanos from = state.limit.rate.emission_interval();
      Nanos free_at = next(state);
      if (free_at + (state.limit.rate.count - 1) * from <= now) {
        // Fresh (see `usage`): it holds nothing, as forgetting the key (gc, Redis expiry)
        // would hold nothing.
        continue;
      }
      if (from >= to) {
        Nanos converted = free_at <= now ? free_at : now + rescale(free_at - now, from, to);
        converted = std::max(converted, free_at - from + to);
        bound = bound ? std::min(*bound, converted) : converted;
      } else {
        // The last grant is spaced at the new rate too.
        Nanos pending = std::max<Nanos>(0, free_at - now);
        kept = std::max(kept, std::max(free_at - from + to, now + rescale(pending, from, to)));
      }
    }
    return {bound ? *bound : kept, 0, 0};
  }

  bool remembers_unnamed() const override { return true; }
};

} // namespace

const Rules& leaky_bucket_rules() {
  static const LeakyBucket rules;
  return rules;
}

} // namespace ratelimit::core
