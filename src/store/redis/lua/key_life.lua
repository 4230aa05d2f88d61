-- The whole life of one stored key, mirroring src/core/key_life.cpp phase for phase, with
-- the same names: what a call does to the key it finds (`stored`, nil for none), and what
-- the script must write back. An outcome is core::KeyOutcome's fields: conflict (the
-- stored algorithm's name), decision, write ('nothing', 'state' or 'erase'), state,
-- fresh_at, takes_algorithm, forgot. A call is {algorithm, chosen, limits, request}.

local function new_key_state(algorithm)
  return {algorithm = algorithm, clock = 0, limits = {}, remembered = {}, log_period = 0,
          granted = 0, paused_until = 0, server = no_word()}
end

-- Phase 1. A key whose state the call would not use as it stands (other limits, another
-- algorithm) and whose limits hold nothing is forgotten: no key, or a key that holds only
-- what a server said that still runs (a pause, a server budget, grants awaiting their
-- answers), with its clock. Returns the key, and whether it was forgotten.
local function forget_if_fresh(stored, call, log)
  if not stored or #stored.limits == 0 or
      (stored.algorithm == call.algorithm and holds_limits(stored, call.limits)) then
    return stored, false
  end
  if not limits_fresh(stored, log, call.request.now) then
    return stored, false
  end
  log.clear()
  if holds_server_word(stored, math.max(call.request.now, stored.clock)) then
    local held = new_key_state(stored.algorithm)
    held.clock, held.paused_until, held.server = stored.clock, stored.paused_until, stored.server
    return held, true
  end
  return nil, true
end

-- Phase 2. The algorithm that decides: a key in use keeps its own, unless the call chose
-- another (a conflict: nil); a key that holds only a pause, or none, takes the call's.
local function settle_algorithm(stored, call)
  if not stored or #stored.limits == 0 or stored.algorithm == call.algorithm then
    return call.algorithm
  end
  if call.chosen then
    return nil
  end
  return stored.algorithm
end

-- When `state`, just decided at `now`, is a fresh key's again.
local function fresh_at(state, log, now)
  local standing = inspect(state, log, now, 1)
  return standing.now + standing.reset_after
end

local function decide_key(stored, call, log)
  local outcome = {write = 'nothing', takes_algorithm = false, forgot = false, fresh_at = 0}
  local was_stored = stored ~= nil
  local had_algorithm = stored ~= nil and #stored.limits > 0
  local stored_algorithm = stored and stored.algorithm

  stored, outcome.forgot = forget_if_fresh(stored, call, log)

  local algorithm = settle_algorithm(stored, call)
  if not algorithm then
    outcome.conflict = stored.algorithm
    return outcome
  end

  -- A denial writes only when it changes the stored key's limits: computed before the
  -- decision takes the call's limits.
  local changes_limits = stored ~= nil and not holds_limits(stored, call.limits)
  outcome.state = stored or new_key_state(algorithm)
  outcome.state.algorithm = algorithm
  outcome.decision = decide(outcome.state, call.limits, log, call.request)

  -- What to write. A denial's limits carried from a debt that ends past k_max_time are not
  -- (its key would read as damaged): the key keeps what it held. A grant is always written,
  -- never lost (it stays within the bounds: fits_within_bounds). A key forgotten in phase 1
  -- carries nothing: its state stays within them.
  if outcome.decision.allowed or (changes_limits and within_bounds(outcome.state)) then
    outcome.write = 'state'
    outcome.fresh_at = fresh_at(outcome.state, log, outcome.decision.now)
    outcome.takes_algorithm = was_stored and (not had_algorithm or stored_algorithm ~= algorithm)
  elseif was_stored and not stored then
    outcome.write = 'erase'
  end
  return outcome
end

local function give_back_to_key(stored, algorithm, limits, grant, now, log)
  local outcome = {write = 'nothing', takes_algorithm = false, forgot = false, fresh_at = 0}
  if not stored or stored.algorithm ~= algorithm or #stored.limits == 0 then
    return outcome
  end
  outcome.state = stored
  give_back(outcome.state, limits, log, now, grant)
  outcome.decision = {now = outcome.state.clock}
  -- As a decision's, limits carried past the bounds are not written.
  if within_bounds(outcome.state) then
    outcome.write = 'state'
    outcome.fresh_at = fresh_at(outcome.state, log, now)
  end
  return outcome
end

local function pause_key(stored, now, duration, log)
  local outcome = {write = 'nothing', takes_algorithm = false, forgot = false, fresh_at = 0}
  outcome.state = stored or new_key_state(nil)
  local paused_until = pause(outcome.state, now, duration)
  outcome.decision = {now = outcome.state.clock, paused_until = paused_until}
  if stored or paused_until > outcome.state.clock then
    outcome.write = 'state'
    outcome.fresh_at = fresh_at(outcome.state, log, now)
  end
  return outcome
end

local function observe_key(stored, now, observation, log)
  local outcome = {write = 'nothing', takes_algorithm = false, forgot = false, fresh_at = 0}
  outcome.state = stored or new_key_state(nil)
  observe(outcome.state, now, observation)
  forget_ended(outcome.state.server, outcome.state.clock)
  outcome.decision = inspect(outcome.state, log, now, 1)
  if stored or holds_server_word(outcome.state, outcome.state.clock) then
    outcome.write = 'state'
    outcome.fresh_at = outcome.decision.now + outcome.decision.reset_after
  end
  return outcome
end
