// Token bucket as a generic cell rate algorithm: instead of a token count and a refill
// time, the state is the theoretical arrival time (TAT), the moment the bucket would be
// full again. Tokens available at `now` are `burst - (tat - now) / interval`. A TAT past
// `now + burst * interval` is debt: reservations made by waiters, as with Go's
// x/time/rate Reserve.
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

class TokenBucket final : public Rules {
  // slots[0]: the theoretical arrival time.
  static Nanos& tat(LimitState& state) { return state.slots[0]; }
  static Nanos tat(const LimitState& state) { return state.slots[0]; }

public:
  Slot earliest(const Limit& limit, const LimitState& state, GrantLog&, Nanos now,
                std::int64_t cost) const override {
    Nanos interval = limit.rate.emission_interval();
    return {std::max(now, tat(state) + (cost - limit.burst) * interval)};
  }

  std::int64_t take(const Limit& limit, LimitState& state, GrantLog&, Nanos, Nanos at,
                    std::int64_t cost) const override {
    tat(state) = std::max(tat(state), at) + cost * limit.rate.emission_interval();
    return tat(state);
  }

  void give_back(const Limit& limit, LimitState& state, GrantLog&, Nanos, std::int64_t cost,
                 std::int64_t marker) const override {
    // Later reservations were scheduled behind this one; only the part of its cost that
    // they did not build on can be returned.
    Nanos later = tat(state) - marker;
    Nanos returned = cost * limit.rate.emission_interval() - later;
    if (returned > 0) {
      tat(state) -= returned;
    }
  }

  Usage usage(const Limit& limit, const LimitState& state, GrantLog&, Nanos now) const override {
    Nanos interval = limit.rate.emission_interval();
    Nanos owed = std::max<Nanos>(0, tat(state) - now);
    std::int64_t tokens = limit.burst - ceil_div(owed, interval);
    return {std::clamp<std::int64_t>(tokens, 0, limit.burst), owed};
  }
};

} // namespace

const Rules& token_bucket_rules() {
  static const TokenBucket rules;
  return rules;
}

} // namespace ratelimit::core
