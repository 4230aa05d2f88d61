#include "core/decide.hpp"

#include "core/adaptive_key.hpp"
#include "core/bounds.hpp"
#include "core/rules.hpp"

#include <algorithm>

namespace ratelimit::core {

const Rules& rules_for(Algorithm algorithm) {
  return info(algorithm).rules();
}

namespace {

const LimitState* find_limit(const std::vector<LimitState>& states, const Limit& limit) {
  auto found = std::find_if(states.begin(), states.end(),
                            [&](const LimitState& s) { return s.limit == limit; });
  return found != states.end() ? &*found : nullptr;
}

// The state of each requested limit: a stored limit equal to it, named by the last call or
// remembered, keeps its state; any other is derived from all the stored ones
// (Rules::carry), so that grants belong to the key, whatever limits the earlier calls named.
std::vector<LimitState> states_for(const Rules& rules, const KeyState& state,
                                   std::span<const Limit> limits, Nanos now) {
  std::vector<LimitState> result;
  result.reserve(limits.size());
  std::vector<LimitState> every_stored;
  for (const Limit& limit : limits) {
    const LimitState* stored = find_limit(state.limits, limit);
    // A shared state is the key's, whatever the limit: its remembered limits keep only
    // what protects their grants.
    if (!stored && !rules.shares_state()) {
      stored = find_limit(state.remembered, limit);
    }
    if (stored) {
      result.push_back({limit, stored->slots});
    } else if (state.remembered.empty()) {
      result.push_back({limit, rules.carry(limit, state.limits, now, state.granted)});
    } else {
      if (every_stored.empty()) {
        every_stored = state.limits;
        every_stored.insert(every_stored.end(), state.remembered.begin(), state.remembered.end());
      }
      result.push_back({limit, rules.carry(limit, every_stored, now, state.granted)});
    }
  }
  return result;
}

// What the key remembers after a call naming `limits`: every stored limit it does not name,
// those of the last call first.
std::vector<LimitState> unnamed_by(const Rules& rules, const KeyState& state,
                                   std::span<const Limit> limits) {
  std::vector<LimitState> unnamed;
  if (!rules.remembers_unnamed()) {
    return unnamed;
  }
  for (const std::vector<LimitState>* stored : {&state.limits, &state.remembered}) {
    for (const LimitState& limit_state : *stored) {
      if (std::find(limits.begin(), limits.end(), limit_state.limit) == limits.end()) {
        unnamed.push_back(limit_state);
      }
    }
  }
  return unnamed;
}

// Forgets the remembered limits that the key no longer needs at `now` (for most, those
// that hold nothing: a call naming one again derives no more than a fresh state from the
// others), then the oldest beyond k_max_remembered.
void forget_fresh(const Rules& rules, std::vector<LimitState>& remembered, GrantLog& log,
                  Nanos now) {
  std::erase_if(remembered,
                [&](const LimitState& s) { return !rules.keeps_remembered(s, log, now); });
  if (remembered.size() > k_max_remembered) {
    remembered.resize(k_max_remembered);
  }
}

// Until the remembered limits hold nothing: the key is not fresh before.
Nanos remembered_after(const Rules& rules, const KeyState& state, GrantLog& log, Nanos now) {
  Nanos after = 0;
  for (const LimitState& s : state.remembered) {
    after = std::max(after, rules.usage(s.limit, s, log, now).reset_after);
  }
  return after;
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

// The slot `at`, moved on as long as a grant of `cost` there would leave the grants that a
// `remembered` limit judged with more than its N (Rules::protect); `state` is the call's.
Nanos protected_slot(const Rules& rules, std::span<const LimitState> remembered,
                     const LimitState& state, GrantLog& log, Nanos at, std::int64_t cost) {
  for (bool moved = true; moved;) {
    moved = false;
    for (const LimitState& limit_state : remembered) {
      Nanos later = rules.protect(limit_state, state, log, at, cost);
      moved = moved || later > at;
      at = std::max(at, later);
    }
  }
  return at;
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

// What a running pause (`decision.paused_until`) and the server's word mean to a decision's
// figures: nothing is available until the pause ends, no more than the server budget has
// left, and the key is not fresh before they end.
void apply_server_word(Decision& decision, const ServerWord& word) {
  if (decision.paused_until > decision.now) {
    decision.remaining = 0;
    decision.reset_after = std::max(decision.reset_after, decision.paused_until - decision.now);
  }
  decision.budget = budget_standing(word, decision.now);
  if (decision.budget) {
    decision.remaining = std::min(decision.remaining, decision.budget->remaining);
  }
  decision.reset_after =
      std::max(decision.reset_after, server_word_until(word, decision.now) - decision.now);
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
  forget_ended(state.server, decision.now);
  std::vector<LimitState> states = states_for(rules, state, limits, decision.now);
  // The stored limits this call does not name: the key remembers them after it.
  std::vector<LimitState> remembered = unnamed_by(rules, state, limits);

  Nanos at = decision.now;
  Nanos accept_from = std::numeric_limits<Nanos>::min();
  std::size_t refusing = limits.size();
  // A queue is full when it holds too much after the key opens: a pause or the server
  // budget holds every waiter, and its reservations wait in the queue from its end, not
  // from now.
  Nanos opens = std::max(
      {decision.now, state.paused_until, budget_open(state.server, decision.now, request.cost)});
  for (std::size_t i = 0; i < limits.size(); ++i) {
    Slot slot = rules.earliest(limits[i], states[i], log, decision.now, request.cost);
    decision.limits[i].retry_after = slot.at - decision.now;
    if (slot.at > at) {
      at = slot.at;
      decision.binding = i;
    }
    if (slot.accept_from > accept_from) {
      accept_from = slot.accept_from;
      if (accept_from > opens) {
        refusing = i;
      }
    }
  }

  if (state.paused_until > decision.now) {
    // Nothing is granted before the pause ends, whatever the limits would allow.
    decision.paused_until = state.paused_until;
    at = std::max(at, state.paused_until);
  }
  if (request.adaptive) {
    // Nor before the slot the learned rate spaces it to.
    at = spaced_slot(state.server, limits, at, decision);
  }
  at = protected_slot(rules, remembered, states.front(), log, at, request.cost);
  if (Nanos open = budget_open(state.server, at, request.cost); open > at) {
    // Nor past what the server said was left, before the reset that admits it.
    decision.budget_until = open;
    at = open;
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
    decision.grant.seq =
        count_grant(state.server, decision.now, at, request.cost, request.answer_wait);
    if (request.adaptive) {
      space_after(*state.server.adaptive, limits, decision.now, decision.grant);
    }
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
  if (decision.allowed && rules.counts_granted()) {
    state.granted = add_window_count(state.granted, request.cost);
  }
  // The state holds the limits of the last call; the key remembers the others while it
  // needs them, and, unless its state is shared, they count this grant too. A denied call
  // changes nothing else.
  if (decision.allowed && !remembered.empty() && !rules.shares_state()) {
    // One that could not count it within the bounds (a debt past 2116) is forgotten.
    std::erase_if(remembered, [&](const LimitState& s) {
      return !fits_within_bounds(state.algorithm, s.limit, s.slots, at, request.cost);
    });
    for (LimitState& limit_state : remembered) {
      rules.take(limit_state.limit, limit_state, log, decision.now, at, request.cost);
    }
  }
  if (decision.allowed || !holds_limits(state, limits)) {
    forget_fresh(rules, remembered, log, decision.now);
    state.limits = states;
    state.remembered = std::move(remembered);
  }
  if (rules.shares_state()) {
    state.log_period = std::max(state.log_period, longest_period(limits));
  }
  summarise(decision, rules, states, log, decision.allowed && wait == 0);
  decision.reset_after =
      std::max(decision.reset_after, remembered_after(rules, state, log, decision.now));
  apply_server_word(decision, state.server);
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
  std::vector<LimitState> remembered = unnamed_by(rules, state, limits);
  forget_fresh(rules, remembered, log, state.clock);
  state.limits = std::move(states);
  state.remembered = std::move(remembered);
  return_grant(state.server, grant.seq, grant.cost, grant.at);
  return_spacing(state.server, grant, state.clock);
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
  if (state.paused_until > decision.now) {
    decision.paused_until = state.paused_until;
    at = std::max(at, state.paused_until);
  }
  if (!state.limits.empty()) {
    at = protected_slot(rules, state.remembered, state.limits.front(), log, at, cost);
  }
  decision.wait = at - decision.now;
  decision.allowed = decision.wait == 0;
  decision.refusal = decision.allowed ? Refusal::none : Refusal::later;
  summarise(decision, rules, state.limits, log, decision.allowed);
  decision.reset_after =
      std::max({decision.reset_after, retention_after(rules, state, decision.now),
                remembered_after(rules, state, log, decision.now)});
  settle_server_word(decision, state, cost);
  return decision;
}

void settle_server_word(Decision& standing, const KeyState& state, std::int64_t cost) {
  Nanos at = standing.now + standing.wait;
  if (Nanos open = budget_open(state.server, at, cost); open > at) {
    standing.budget_until = open;
    standing.wait = open - standing.now;
    standing.allowed = false;
    standing.refusal = Refusal::later;
  }
  if (state.limits.empty()) {
    // A key that holds only what a server said has no limit to count from: what its budget
    // has left, if it has one.
    standing.remaining =
        budget_standing(state.server, standing.now) ? std::numeric_limits<std::int64_t>::max() : 0;
  }
  apply_server_word(standing, state.server);
}

void read_earlier_version(KeyState& state) {
  const Rules& rules = rules_for(state.algorithm);
  if (!rules.counts_granted()) {
    return;
  }
  state.granted = k_max_window_count;
  for (std::vector<LimitState>* states : {&state.limits, &state.remembered}) {
    for (LimitState& limit_state : *states) {
      rules.read_earlier_version(limit_state);
    }
  }
}

bool is_fresh(const KeyState& state, GrantLog& log, Nanos now) {
  return !holds_server_word(state, std::max(now, state.clock)) && limits_fresh(state, log, now);
}

bool holds_server_word(const KeyState& state, Nanos now) {
  return state.paused_until > now || server_word_until(state.server, now) > now;
}

bool limits_fresh(const KeyState& state, GrantLog& log, Nanos now) {
  const Rules& rules = rules_for(state.algorithm);
  Nanos time = std::max(now, state.clock);
  if (retention_after(rules, state, time) > 0) {
    return false;
  }
  return remembered_after(rules, state, log, time) == 0 &&
         std::all_of(state.limits.begin(), state.limits.end(), [&](const LimitState& s) {
           return rules.usage(s.limit, s, log, time).reset_after == 0;
         });
}

Nanos pause(KeyState& state, Nanos now, Nanos duration) {
  state.clock = std::max(state.clock, now);
  Nanos until = duration >= k_max_time - state.clock ? k_max_time : state.clock + duration;
  state.paused_until = std::max(state.paused_until, until);
  return state.paused_until;
}

Nanos observe(KeyState& state, Nanos now, const Observation& observation) {
  state.clock = std::max(state.clock, now);
  if (observation.pause > 0) {
    pause(state, state.clock, observation.pause);
  }
  observe_server(state.server, state.clock, observation);
  learn_from_answer(state.server, state.limits, observation, state.clock);
  return state.paused_until;
}

} // namespace ratelimit::core
