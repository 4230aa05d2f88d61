#include "core/decide.hpp"

#include "core/bounds.hpp"
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

const Rules& rules_for(Algorithm algorithm) { return info(algorithm).rules(); }

namespace {

// The state of each requested limit: a stored limit equal to it keeps its state; any
// other is derived from the stored ones (Rules::carry), so that grants belong to the key,
// whatever limits the earlier calls named.
std::vector<LimitState> states_for(const Rules& rules, const KeyState& state,
                                   std::span<const Limit> limits, Nanos now) {
  std::vector<LimitState> result;
  result.reserve(limits.size());
  for (const Limit& limit : limits) {
    auto stored = std::find_if(state.limits.begin(), state.limits.end(),
                               [&](const LimitState& s) { return s.limit == limit; });
    result.push_back({limit, stored != state.limits.end() ? stored->slots
                                                          : rules.carry(limit, state.limits, now)});
  }
  return result;
}

// Whether `state` holds exactly `limits`, in this order.
bool holds_limits(const KeyState& state, std::span<const Limit> limits) {
  return std::equal(state.limits.begin(), state.limits.end(), limits.begin(), limits.end(),
                    [](const LimitState& s, const Limit& limit) { return s.limit == limit; });
}

// The longest period of `limits`.
Nanos longest_period(std::span<const Limit> limits) {
  Nanos longest = 0;
  for (const Limit& limit : limits) {
    longest = std::max(longest, limit.rate.period);
  }
  return longest;
}

// The limit whose period is the log's retention, for a shared state's `take` and
// `give_back`.
Limit retention_limit(const KeyState& state, std::span<const Limit> limits) {
  Limit retention = limits.front();
  retention.rate.period = std::max(longest_period(limits), state.log_period);
  return retention;
}

// A shared log's grants still inside its retention: until then the key is not fresh,
// since a call with the retention's period would count them.
Nanos retention_after(const Rules& rules, const KeyState& state, Nanos now) {
  if (!rules.shares_state() || state.limits.empty()) {
    return 0;
  }
  return std::max<Nanos>(0, state.limits.front().slots[0] + state.log_period - now);
}

// Fills in what each limit has left. `pick_binding`: the decision was granted at once,
// when every limit agreed, so the binding limit is the one with the least remaining.
void summarise(Decision& decision, const Rules& rules, std::span<const LimitState> states,
               GrantLog& log, bool pick_binding) {
  decision.remaining = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < states.size(); ++i) {
    Usage usage = rules.usage(states[i].limit, states[i], log, decision.now);
    decision.limits[i].remaining = usage.remaining;
    decision.limits[i].reset_after = usage.reset_after;
    decision.reset_after = std::max(decision.reset_after, usage.reset_after);
    if (usage.remaining < decision.remaining) {
      decision.remaining = usage.remaining;
      if (pick_binding) {
        decision.binding = i;
      }
    }
  }
}

} // namespace

Decision decide(KeyState& state, std::span<const Limit> limits, GrantLog& log,
                const Request& request) {
  const Rules& rules = rules_for(state.algorithm);
  Decision decision;
  decision.algorithm = state.algorithm;
  decision.now = std::max(request.now, state.clock);
  decision.limits.resize(limits.size());
  state.clock = decision.now;
  std::vector<LimitState> states = states_for(rules, state, limits, decision.now);

  Nanos at = decision.now;
  Nanos accept_from = std::numeric_limits<Nanos>::min();
  std::size_t refusing = limits.size();
  for (std::size_t i = 0; i < limits.size(); ++i) {
    Slot slot = rules.earliest(limits[i], states[i], log, decision.now, request.cost);
    decision.limits[i].retry_after = slot.at - decision.now;
    if (slot.at > at) {
      at = slot.at;
      decision.binding = i;
    }
    if (slot.accept_from > accept_from) {
      accept_from = slot.accept_from;
      if (accept_from > decision.now) {
        refusing = i;
      }
    }
  }

  Nanos wait = at - decision.now;
  if (!request.reserve) {
    decision.refusal = wait == 0 ? Refusal::none : Refusal::later;
  } else if (refusing < limits.size()) {
    // A full queue refuses the request however long the caller would wait.
    decision.refusal = Refusal::full;
    decision.binding = refusing;
    wait = std::max(wait, accept_from - decision.now);
  } else {
    decision.refusal = wait <= request.max_wait ? Refusal::none : Refusal::timeout;
  }
  if (decision.refusal == Refusal::none) {
    // Reservations could push a schedule past what int64 holds: such a slot is refused,
    // like one beyond the caller's wait, never wrapped round.
    for (std::size_t i = 0; i < limits.size(); ++i) {
      if (!fits_within_bounds(state.algorithm, limits[i], states[i].slots, at, request.cost)) {
        decision.refusal = Refusal::too_far;
        decision.binding = i;
        break;
      }
    }
  }
  decision.allowed = decision.refusal == Refusal::none;
  decision.wait = wait;

  if (decision.allowed) {
    decision.grant = {at, request.cost, {}};
    if (rules.shares_state()) {
      std::int64_t marker = rules.take(retention_limit(state, limits), states[0], log, decision.now,
                                       at, request.cost);
      for (LimitState& limit_state : states) {
        limit_state.slots = states[0].slots;
      }
      decision.grant.markers.assign(limits.size(), marker);
    } else {
      for (std::size_t i = 0; i < limits.size(); ++i) {
        decision.grant.markers.push_back(
            rules.take(limits[i], states[i], log, decision.now, at, request.cost));
      }
    }
  }
  // The state holds the limits of the last call: those no longer named do not linger, and
  // what they had in use is in the states derived from them. A denied call changes nothing
  // else.
  if (decision.allowed || !holds_limits(state, limits)) {
    state.limits = states;
  }
  if (rules.shares_state()) {
    state.log_period = std::max(state.log_period, longest_period(limits));
  }
  summarise(decision, rules, states, log, decision.allowed && wait == 0);
  return decision;
}

void give_back(KeyState& state, std::span<const Limit> limits, GrantLog& log, Nanos now,
               const Grant& grant) {
  const Rules& rules = rules_for(state.algorithm);
  state.clock = std::max(state.clock, now);
  std::vector<LimitState> states = states_for(rules, state, limits, state.clock);
  if (rules.shares_state()) {
    if (!grant.markers.empty()) {
      rules.give_back(retention_limit(state, limits), states[0], log, grant.at, grant.cost,
                      grant.markers[0]);
      for (LimitState& limit_state : states) {
        limit_state.slots = states[0].slots;
      }
    }
  } else {
    for (std::size_t i = 0; i < limits.size() && i < grant.markers.size(); ++i) {
      rules.give_back(limits[i], states[i], log, grant.at, grant.cost, grant.markers[i]);
    }
  }
  state.limits = std::move(states);
}

Decision inspect(const KeyState& state, GrantLog& log, Nanos now, std::int64_t cost) {
  const Rules& rules = rules_for(state.algorithm);
  Decision decision;
  decision.algorithm = state.algorithm;
  decision.now = std::max(now, state.clock);
  decision.limits.resize(state.limits.size());
  Nanos at = decision.now;
  for (std::size_t i = 0; i < state.limits.size(); ++i) {
    const LimitState& limit_state = state.limits[i];
    Slot slot = rules.earliest(limit_state.limit, limit_state, log, decision.now, cost);
    decision.limits[i].retry_after = slot.at - decision.now;
    if (slot.at > at) {
      at = slot.at;
      decision.binding = i;
    }
  }
  decision.wait = at - decision.now;
  decision.allowed = decision.wait == 0;
  decision.refusal = decision.allowed ? Refusal::none : Refusal::later;
  summarise(decision, rules, state.limits, log, decision.allowed);
  decision.reset_after =
      std::max(decision.reset_after, retention_after(rules, state, decision.now));
  return decision;
}

bool is_fresh(const KeyState& state, GrantLog& log, Nanos now) {
  const Rules& rules = rules_for(state.algorithm);
  Nanos time = std::max(now, state.clock);
  if (retention_after(rules, state, time) > 0) {
    return false;
  }
  return std::all_of(state.limits.begin(), state.limits.end(), [&](const LimitState& limit_state) {
    return rules.usage(limit_state.limit, limit_state, log, time).reset_after == 0;
  });
}

} // namespace ratelimit::core
