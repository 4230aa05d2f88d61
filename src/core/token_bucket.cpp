// Token bucket as a generic cell rate algorithm: instead of a token count and a refill
// time, the state is the theoretical arrival time (TAT), the moment the bucket would be
// full again. Tokens available at `now` are `burst - (tat - now) / interval`. A TAT past
// `now + burst * interval` is debt: reservations made by waiters, as with Go's
// x/time/rate Reserve.
//
// Why it never over-admits, even when a cancelled reservation lets a later request take a
// slot ahead of reservations still standing: for grants (t_k, c_k), let
//   T = max over k of (t_k + interval * cost of the grants at or after t_k).
// While `tat >= T`, a request admitted at t (tat + (cost - burst) * interval <= t) keeps
// every closed interval [s, u] within burst + (u - s) / interval, and taking it keeps
// `tat >= T`. Returning a grant g lowers T by at most its cost, and by nothing for the
// grants after it; those are at most `latest - t_g` later, hence `give_back`'s bound.
#include "core/rules.hpp"

#include <algorithm>
#include <optional>

namespace ratelimit::core {

namespace {

class TokenBucket final : public Rules {
  // slots[0]: the theoretical arrival time. slots[1]: not before the latest grant still
  // standing (only `give_back` reads it).
  static Nanos& tat(LimitState& state) { return state.slots[0]; }
  static Nanos tat(const LimitState& state) { return state.slots[0]; }
  static Nanos& latest(LimitState& state) { return state.slots[1]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    Nanos interval = limit.rate.emission_interval();
    return {std::max(now, tat(state) + (cost - limit.burst) * interval)};
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog&, Nanos, Nanos at,
                    std::int64_t cost) const override {
    tat(state) = std::max(tat(state), at) + cost * limit.rate.emission_interval();
    latest(state) = std::max(latest(state), at);
    return tat(state);
  }

  void give_back(const Limit& limit, LimitState& state, GrantLog&, Nanos at, std::int64_t cost,
                 std::int64_t) const override {
    // Grants after this one keep the part of its cost that lies within their distance
    // from it (see the top of the file).
    Nanos interval = limit.rate.emission_interval();
    Nanos returned = cost * interval - std::max<Nanos>(0, latest(state) - at);
    if (returned > 0) {
      tat(state) -= returned;
      // Every grant still standing ends (t + cost * interval) by the TAT: a tighter bound
      // on the latest one, which lets the grants before it be returned too.
      latest(state) = std::min(latest(state), tat(state) - interval);
    }
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog&, Nanos now) const override {
    Nanos interval = limit.rate.emission_interval();
    Nanos owed = std::max<Nanos>(0, tat(state) - now);
    std::int64_t tokens = limit.burst - ceil_div(owed, interval);
    return {std::clamp<std::int64_t>(tokens, 0, limit.burst), owed};
  }

  std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored,
                                    Nanos now, std::int64_t) const override {
    // A stored limit at most as fast as the new one bounds it: its TAT is at least
    // t + cost * its interval for every grant t (with `cost` granted from t on), so the
    // same units at the new, shorter interval end no later than its time in use, rescaled.
    // Of those bounds the least holds. A faster stored limit bounds nothing; its units in
    // use, reservations queued beyond its burst included, are kept at the new rate, and of
    // those the most. The key remembers the limits it converts from (`remembered`), so a
    // limit is converted once, when first named, never back and forth.
    Nanos to = limit.rate.emission_interval();
    std::optional<Nanos> bound;
    Nanos kept = 0;
    Nanos latest_grant = 0;
    for (const LimitState& state : stored) {
      Nanos from = state.limit.rate.emission_interval();
      Nanos owed_until = tat(state);
      Nanos latest_at = state.slots[1];
      latest_grant = std::max(latest_grant, latest_at);
      if (from >= to) {
        Nanos converted =
            owed_until <= now ? owed_until : now + rescale(owed_until - now, from, to);
        // A reservation after `now` (at most the latest grant) ends its units from there.
        if (latest_at > now && latest_at < owed_until) {
          converted = std::max(converted, latest_at + rescale(owed_until - latest_at, from, to));
        }
        bound = bound ? std::min(*bound, converted) : converted;
      } else {
        Nanos owed = std::max<Nanos>(0, owed_until - now);
        kept = std::max(kept, std::max(owed_until, now + rescale(owed, from, to)));
      }
    }
    return {bound ? *bound : kept, latest_grant, 0};
  }

  bool remembers_unnamed() const override { return true; }
};

} // namespace

const Rules& token_bucket_rules() {
  static const TokenBucket rules;
  return rules;
}

} // namespace ratelimit::core
