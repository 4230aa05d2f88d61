#include "core/key_life.hpp"

#include "core/bounds.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

// Whether `state` holds exactly `limits`, in this order.
bool holds_limits(const KeyState& state, std::span<const Limit> limits) {
  return std::equal(state.limits.begin(), state.limits.end(), limits.begin(), limits.end(),
                    [](const LimitState& s, const Limit& limit) { return s.limit == limit; });
}

// Phase 1. A key whose state the call would not use as it stands (other limits, another
// algorithm) and whose limits hold nothing is forgotten: `stored` becomes no key, or a key
// that holds only what a server said that still runs (a pause, a server budget, grants
// awaiting their answers), with its clock. Returns whether it was.
bool forget_if_fresh(std::optional<KeyState>& stored, const KeyCall& call, GrantLog& log) {
  if (!stored || stored->limits.empty() ||
      (stored->algorithm == call.algorithm && holds_limits(*stored, call.limits))) {
    return false;
  }
  if (!limits_fresh(*stored, log, call.request.now)) {
    return false;
  }
  log.clear();
  if (holds_server_word(*stored, std::max(call.request.now, stored->clock))) {
    KeyState held;
    held.algorithm = stored->algorithm;
    held.clock = stored->clock;
    held.paused_until = stored->paused_until;
    held.server = std::move(stored->server);
    *stored = std::move(held);
  } else {
    stored.reset();
  }
  return true;
}

// Phase 2. The algorithm that decides: a key in use keeps its own, unless the call chose
// another (a conflict: none); a key that holds only a pause, or none, takes the call's.
std::optional<Algorithm> settle_algorithm(const std::optional<KeyState>& stored,
                                          const KeyCall& call) {
  if (!stored || stored->limits.empty() || stored->algorithm == call.algorithm) {
    return call.algorithm;
  }
  if (call.chosen) {
    return std::nullopt;
  }
  return stored->algorithm;
}

// When `state`, just decided at `now`, is a fresh key's again.
Nanos fresh_at(const KeyState& state, GrantLog& log, Nanos now) {
  Decision standing = inspect(state, log, now);
  return standing.now + standing.reset_after;
}

} // namespace

KeyOutcome decide_key(std::optional<KeyState> stored, const KeyCall& call, GrantLog& log) {
  KeyOutcome outcome;
  bool was_stored = stored.has_value();
  bool had_algorithm = stored && !stored->limits.empty();
  Algorithm stored_algorithm = stored ? stored->algorithm : call.algorithm;

  outcome.forgot = forget_if_fresh(stored, call, log);

  std::optional<Algorithm> algorithm = settle_algorithm(stored, call);
  if (!algorithm) {
    outcome.conflict = stored->algorithm;
    return outcome;
  }

  // A denial writes only when it changes the stored key's limits: computed before the
  // decision takes the call's limits.
  bool changes_limits = stored && !holds_limits(*stored, call.limits);
  outcome.state = stored ? std::move(*stored) : KeyState{*algorithm, 0, {}};
  outcome.state.algorithm = *algorithm;
  outcome.decision = decide(outcome.state, call.limits, log, call.request);

  // What to write. A denial's limits carried from a debt that ends past k_max_time are not
  // (its key would read as damaged): the key keeps what it held. A grant is always written,
  // never lost (it stays within the bounds: fits_within_bounds). A key forgotten in phase 1
  // carries nothing: its state stays within them.
  if (outcome.decision.allowed || (changes_limits && within_bounds(outcome.state))) {
    outcome.write = KeyWrite::state;
    outcome.fresh_at = fresh_at(outcome.state, log, outcome.decision.now);
    outcome.takes_algorithm = was_stored && (!had_algorithm || stored_algorithm != *algorithm);
  } else if (was_stored && !stored) {
    outcome.write = KeyWrite::erase;
  }
  return outcome;
}

KeyOutcome give_back_to_key(std::optional<KeyState> stored, Algorithm algorithm,
                            std::span<const Limit> limits, const Grant& grant, Nanos now,
                            GrantLog& log) {
  KeyOutcome outcome;
  if (!stored || stored->algorithm != algorithm || stored->limits.empty()) {
    return outcome;
  }
  outcome.state = std::move(*stored);
  give_back(outcome.state, limits, log, now, grant);
  outcome.decision.now = outcome.state.clock;
  // As a decision's, limits carried past the bounds are not written.
  if (within_bounds(outcome.state)) {
    outcome.write = KeyWrite::state;
    outcome.fresh_at = fresh_at(outcome.state, log, now);
  }
  return outcome;
}

KeyOutcome pause_key(std::optional<KeyState> stored, Nanos now, Nanos duration, GrantLog& log) {
  KeyOutcome outcome;
  bool was_stored = stored.has_value();
  outcome.state = stored ? std::move(*stored) : KeyState{};
  outcome.decision.paused_until = pause(outcome.state, now, duration);
  outcome.decision.now = outcome.state.clock;
  if (was_stored || outcome.decision.paused_until > outcome.state.clock) {
    outcome.write = KeyWrite::state;
    outcome.fresh_at = fresh_at(outcome.state, log, now);
  }
  return outcome;
}

KeyOutcome observe_key(std::optional<KeyState> stored, Nanos now, const Observation& observation,
                       GrantLog& log) {
  KeyOutcome outcome;
  bool was_stored = stored.has_value();
  outcome.state = stored ? std::move(*stored) : KeyState{};
  observe(outcome.state, now, observation);
  forget_ended(outcome.state.server, outcome.state.clock);
  outcome.decision = inspect(outcome.state, log, now);
  if (was_stored || holds_server_word(outcome.state, outcome.state.clock)) {
    outcome.write = KeyWrite::state;
    outcome.fresh_at = outcome.decision.now + outcome.decision.reset_after;
  }
  return outcome;
}

} // namespace ratelimit::core
