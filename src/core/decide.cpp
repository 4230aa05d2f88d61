#include "core/decide.hpp"

#include "core/bounds.hpp"
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

const Rules& token_bucket_rules();
const Rules& leaky_bucket_rules();
const Rules& fixed_window_rules();
const Rules& sliding_window_rules();
const Rules& sliding_log_rules();

const Rules& rules_for(Algorithm algorithm) {
  switch (algorithm) {
  case Algorithm::token_bucket:
    return token_bucket_rules();
  case Algorithm::leaky_bucket:
    return leaky_bucket_rules();
  case Algorithm::fixed_window:
    return fixed_window_rules();
  case Algorithm::sliding_window:
    return sliding_window_rules();
  case Algorithm::sliding_log:
    return sliding_log_rules();
  }
  return token_bucket_rules();
}

namespace {

// The stored state of each requested limit, by period; a limit not stored yet is fresh.
std::vector<LimitState> states_for(const KeyState& state, std::span<const Limit> limits) {
  std::vector<LimitState> result;
  result.reserve(limits.size());
  for (const Limit& limit : limits) {
    auto stored =
        std::find_if(state.limits.begin(), state.limits.end(),
                     [&](const LimitState& s) { return s.limit.rate.period == limit.rate.period; });
    result.push_back({limit, stored != state.limits.end() ? stored->slots : LimitState{}.slots});
  }
  return result;
}

// Writes `states` back into `state`. A stored limit that this request did not name keeps
// its state: another process may still be limited by it, and a sliding log's entries
// must keep agreeing with their cumulative costs.
void store_states(KeyState& state, const std::vector<LimitState>& states) {
  for (const LimitState& updated : states) {
    auto stored = std::find_if(state.limits.begin(), state.limits.end(), [&](const LimitState& s) {
      return s.limit.rate.period == updated.limit.rate.period;
    });
    if (stored != state.limits.end()) {
      *stored = updated;
    } else {
      state.limits.push_back(updated);
    }
  }
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
  decision.now = std::max(request.now, state.clock);
  decision.limits.resize(limits.size());
  state.clock = decision.now;
  std::vector<LimitState> states = states_for(state, limits);

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
    for (std::size_t i = 0; i < limits.size(); ++i) {
      decision.grant.markers.push_back(
          rules.take(limits[i], states[i], log, decision.now, at, request.cost));
    }
    store_states(state, states);
  }
  summarise(decision, rules, states, log, decision.allowed && wait == 0);
  return decision;
}

void give_back(KeyState& state, std::span<const Limit> limits, GrantLog& log, Nanos now,
               const Grant& grant) {
  const Rules& rules = rules_for(state.algorithm);
  state.clock = std::max(state.clock, now);
  std::vector<LimitState> states = states_for(state, limits);
  for (std::size_t i = 0; i < limits.size() && i < grant.markers.size(); ++i) {
    rules.give_back(limits[i], states[i], log, grant.at, grant.cost, grant.markers[i]);
  }
  store_states(state, states);
}

Decision inspect(const KeyState& state, GrantLog& log, Nanos now, std::int64_t cost) {
  const Rules& rules = rules_for(state.algorithm);
  Decision decision;
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
  return decision;
}

bool is_fresh(const KeyState& state, GrantLog& log, Nanos now) {
  const Rules& rules = rules_for(state.algorithm);
  Nanos time = std::max(now, state.clock);
  return std::all_of(state.limits.begin(), state.limits.end(), [&](const LimitState& limit_state) {
    return rules.usage(limit_state.limit, limit_state, log, time).reset_after == 0;
  });
}

} // namespace ratelimit::core
