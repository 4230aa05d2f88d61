-- The decisions on one key's state, mirroring src/core/decide.cpp function for function,
-- with the same names. A key's state is {algorithm, clock, limits, remembered, log_period,
-- granted, paused_until}, where limits and remembered list {limit, slots}
-- (core::LimitState) and the algorithm is a name (nil for a key that holds only a pause); a
-- request is {now, cost, reserve, max_wait}; a decision is core::Decision's fields, its
-- binding counted from 1.

local function same_limit(a, b)
  return a.count == b.count and a.period == b.period and a.burst == b.burst
end

local function names_limit(limits, limit)
  for _, named in ipairs(limits) do
    if same_limit(named, limit) then
      return true
    end
  end
  return false
end

local function find_limit(states, limit)
  for _, s in ipairs(states) do
    if same_limit(s.limit, limit) then
      return s
    end
  end
  return nil
end

local function copy_slots(slots)
  return {slots[1], slots[2], slots[3]}
end

-- The state of each requested limit: a stored limit equal to it, named by the last call or
-- remembered, keeps its state; any other is derived from all the stored ones (the rules'
-- carry).
local function states_for(algorithm, state, limits, now)
  local rules = algorithm.rules
  local result = {}
  local every_stored = nil
  for i, limit in ipairs(limits) do
    local stored = find_limit(state.limits, limit)
    -- A shared state is the key's, whatever the limit: its remembered limits keep only
    -- what protects their grants.
    if not stored and not algorithm.shares_state then
      stored = find_limit(state.remembered, limit)
    end
    if stored then
      result[i] = {limit = limit, slots = copy_slots(stored.slots)}
    elseif #state.remembered == 0 then
      result[i] = {limit = limit, slots = rules.carry(limit, state.limits, now, state.granted)}
    else
      if not every_stored then
        every_stored = {}
        for _, list in ipairs({state.limits, state.remembered}) do
          for _, s in ipairs(list) do
            every_stored[#every_stored + 1] = s
          end
        end
      end
      result[i] = {limit = limit, slots = rules.carry(limit, every_stored, now, state.granted)}
    end
  end
  return result
end

-- What the key remembers after a call naming `limits`: every stored limit it does not name,
-- those of the last call first (copies).
local function unnamed_by(algorithm, state, limits)
  local unnamed = {}
  if not algorithm.remembers_unnamed then
    return unnamed
  end
  for _, stored in ipairs({state.limits, state.remembered}) do
    for _, s in ipairs(stored) do
      if not names_limit(limits, s.limit) then
        unnamed[#unnamed + 1] = {limit = s.limit, slots = copy_slots(s.slots)}
      end
    end
  end
  return unnamed
end

-- Rules::keeps_remembered: whether the key still needs `s`, a limit it remembers, at
-- `now`; by default while it holds something.
local function keeps_remembered(rules, s, log, now)
  if rules.keeps_remembered then
    return rules.keeps_remembered(s, log, now)
  end
  local _, reset_after = rules.usage(s.limit, s.slots, log, now)
  return reset_after > 0
end

-- Forgets the remembered limits that the key no longer needs at `now`, then the oldest
-- beyond k_max_remembered.
local function forget_fresh(rules, remembered, log, now)
  local kept = {}
  for _, s in ipairs(remembered) do
    if keeps_remembered(rules, s, log, now) and #kept < k_max_remembered then
      kept[#kept + 1] = s
    end
  end
  return kept
end

-- Until the remembered limits hold nothing: the key is not fresh before.
local function remembered_after(rules, state, log, now)
  local after = 0
  for _, s in ipairs(state.remembered) do
    local _, reset_after = rules.usage(s.limit, s.slots, log, now)
    after = math.max(after, reset_after)
  end
  return after
end

-- Whether `state` holds exactly `limits`, in this order.
local function holds_limits(state, limits)
  if #state.limits ~= #limits then
    return false
  end
  for i, limit in ipairs(limits) do
    if not same_limit(state.limits[i].limit, limit) then
      return false
    end
  end
  return true
end

-- The longest period of `limits`.
local function longest_period(limits)
  local longest = 0
  for _, limit in ipairs(limits) do
    longest = math.max(longest, limit.period)
  end
  return longest
end

-- The limit whose period is the log's retention, for a shared state's take and give_back.
local function retention_limit(state, limits)
  local first = limits[1]
  return make_limit(first.count, math.max(longest_period(limits), state.log_period), first.burst)
end

-- A shared log's grants still inside its retention: until then the key is not fresh.
local function retention_after(algorithm, state, now)
  if not algorithm.shares_state or #state.limits == 0 then
    return 0
  end
  return math.max(0, state.limits[1].slots[1] + state.log_period - now)
end

-- The slot `at`, moved on as long as a grant of `cost` there would leave the grants that a
-- `remembered` limit judged with more than its N (the rules' protect; by default `at`);
-- `state` is the call's.
local function protected_slot(rules, remembered, state, log, at, cost)
  if not rules.protect then
    return at
  end
  local moved = true
  while moved do
    moved = false
    for _, s in ipairs(remembered) do
      local later = rules.protect(s, state.slots, log, at, cost)
      moved = moved or later > at
      at = math.max(at, later)
    end
  end
  return at
end

-- Fills in what each limit has left. `pick_binding`: the decision was granted at once, when
-- every limit agreed, so the binding limit is the one with the least remaining.
local function summarise(decision, rules, states, log, pick_binding)
  decision.remaining = nil
  for i, s in ipairs(states) do
    local remaining, reset_after = rules.usage(s.limit, s.slots, log, decision.now)
    decision.limits[i].remaining = remaining
    decision.limits[i].reset_after = reset_after
    decision.reset_after = math.max(decision.reset_after, reset_after)
    if not decision.remaining or remaining < decision.remaining then
      decision.remaining = remaining
      if pick_binding then
        decision.binding = i
      end
    end
  end
end

-- What a running pause (`decision.paused_until`) and the server's word mean to a decision's
-- figures: nothing is available until the pause ends, no more than the server budget has
-- left, and the key is not fresh before either ends.
local function apply_server_word(decision, word)
  if decision.paused_until > decision.now then
    decision.remaining = 0
    decision.reset_after = math.max(decision.reset_after, decision.paused_until - decision.now)
  end
  decision.budget_remaining, decision.budget_reset = budget_standing(word, decision.now)
  if decision.budget_remaining then
    decision.remaining = math.min(decision.remaining, decision.budget_remaining)
  end
  decision.reset_after =
    math.max(decision.reset_after, server_word_until(word, decision.now) - decision.now)
end

local function new_decision(state, now, n)
  local decision = {allowed = false, algorithm = state.algorithm, refusal = k_refusal.none,
                    now = now, wait = 0, binding = 1, remaining = 0, reset_after = 0,
                    paused_until = 0, budget_until = 0, adaptive_rate = 0,
                    spaced_until = 0, limits = {},
                    grant = {at = 0, cost = 0, seq = 0, paced = 0, markers = {}}}
  for i = 1, n do
    decision.limits[i] = {remaining = 0, reset_after = 0, retry_after = 0}
  end
  return decision
end

-- core::decide: decides `request` for the key of `state` under `limits`, updating `state`
-- and `log` when granted.
local function decide(state, limits, log, request)
  local algorithm = algorithm_of(state)
  local rules = algorithm.rules
  local decision = new_decision(state, math.max(request.now, state.clock), #limits)
  state.clock = decision.now
  forget_ended(state.server, decision.now)
  local states = states_for(algorithm, state, limits, decision.now)
  -- The stored limits this call does not name: the key remembers them after it.
  local remembered = unnamed_by(algorithm, state, limits)

  local at = decision.now
  local accept_from = -math.huge
  local refusing = nil
  -- A queue is full when it holds too much after the key opens: a pause or the server
  -- budget holds every waiter, and its reservations wait in the queue from its end, not
  -- from now.
  local opens = math.max(decision.now, state.paused_until,
                         budget_open(state.server, decision.now, request.cost))
  for i, limit in ipairs(limits) do
    local slot_at, slot_accept_from =
      rules.earliest(limit, states[i].slots, log, decision.now, request.cost)
    decision.limits[i].retry_after = slot_at - decision.now
    if slot_at > at then
      at = slot_at
      decision.binding = i
    end
    if slot_accept_from and slot_accept_from > accept_from then
      accept_from = slot_accept_from
      if accept_from > opens then
        refusing = i
      end
    end
  end

  if state.paused_until > decision.now then
    -- Nothing is granted before the pause ends, whatever the limits would allow.
    decision.paused_until = state.paused_until
    at = math.max(at, state.paused_until)
  end
  if request.adaptive then
    -- Nor before the slot the learned rate spaces it to.
    at = spaced_slot(state.server, limits, at, decision)
  end
  at = protected_slot(rules, remembered, states[1], log, at, request.cost)
  local open = budget_open(state.server, at, request.cost)
  if open > at then
    -- Nor past what the server said was left, before the reset that admits it.
    decision.budget_until, at = open, open
  end
  local wait = at - decision.now
  if not request.reserve then
    decision.refusal = wait == 0 and k_refusal.none or k_refusal.later
  elseif refusing then
    -- A full queue refuses the request however long the caller would wait.
    decision.refusal = k_refusal.full
    decision.binding = refusing
    wait = math.max(wait, accept_from - decision.now)
  else
    decision.refusal = wait <= request.max_wait and k_refusal.none or k_refusal.timeout
  end
  if decision.refusal == k_refusal.none then
    -- Reservations could push a schedule past what the store counts exactly: such a slot
    -- is refused, like one beyond the caller's wait, never wrapped round.
    for i, limit in ipairs(limits) do
      if not fits_within_bounds(algorithm, limit, states[i].slots, at, request.cost) then
        decision.refusal = k_refusal.too_far
        decision.binding = i
        break
      end
    end
  end
  decision.allowed = decision.refusal == k_refusal.none
  decision.wait = wait

  if decision.allowed then
    decision.grant = {at = at, cost = request.cost, markers = {}, paced = 0,
                      seq = count_grant(state.server, decision.now, at, request.cost,
                                        request.answer_wait)}
    if request.adaptive then
      space_after(state.server.adaptive, limits, decision.now, decision.grant)
    end
    if algorithm.shares_state then
      local marker = rules.take(retention_limit(state, limits), states[1].slots, log,
                                decision.now, at, request.cost)
      for i = 1, #limits do
        states[i].slots = copy_slots(states[1].slots)
        decision.grant.markers[i] = marker
      end
    else
      for i, limit in ipairs(limits) do
        decision.grant.markers[i] =
          rules.take(limit, states[i].slots, log, decision.now, at, request.cost)
      end
    end
  end
  if decision.allowed and algorithm.counts_granted then
    state.granted = add_window_count(state.granted, request.cost)
  end
  -- The state holds the limits of the last call; the key remembers the others while it
  -- needs them, and, unless its state is shared, they count this grant too. A denied call
  -- changes nothing else.
  if decision.allowed and #remembered > 0 and not algorithm.shares_state then
    -- One that could not count it within the bounds (a debt past 2116) is forgotten.
    local fitting = {}
    for _, s in ipairs(remembered) do
      if fits_within_bounds(algorithm, s.limit, s.slots, at, request.cost) then
        fitting[#fitting + 1] = s
      end
    end
    remembered = fitting
    for _, s in ipairs(remembered) do
      rules.take(s.limit, s.slots, log, decision.now, at, request.cost)
    end
  end
  if decision.allowed or not holds_limits(state, limits) then
    state.remembered = forget_fresh(rules, remembered, log, decision.now)
    state.limits = states
  end
  if algorithm.shares_state then
    state.log_period = math.max(state.log_period, longest_period(limits))
  end
  summarise(decision, rules, states, log, decision.allowed and wait == 0)
  decision.reset_after =
    math.max(decision.reset_after, remembered_after(rules, state, log, decision.now))
  apply_server_word(decision, state.server)
  return decision
end

-- core::give_back: returns what `grant` reserved, at `now`.
local function give_back(state, limits, log, now, grant)
  local algorithm = algorithm_of(state)
  local rules = algorithm.rules
  state.clock = math.max(state.clock, now)
  local states = states_for(algorithm, state, limits, state.clock)
  if algorithm.shares_state then
    if #grant.markers > 0 then
      rules.give_back(retention_limit(state, limits), states[1].slots, log, grant.at,
                      grant.cost, grant.markers[1])
      for i = 2, #limits do
        states[i].slots = copy_slots(states[1].slots)
      end
    end
  else
    for i, limit in ipairs(limits) do
      if i <= #grant.markers then
        rules.give_back(limit, states[i].slots, log, grant.at, grant.cost, grant.markers[i])
      end
    end
  end
  local remembered = unnamed_by(algorithm, state, limits)
  state.remembered = forget_fresh(rules, remembered, log, state.clock)
  state.limits = states
  return_grant(state.server, grant.seq, grant.cost, grant.at)
  return_spacing(state.server, grant, state.clock)
end

-- core::inspect: the key's standing under its stored limits, without changing it.
local function inspect(state, log, now, cost)
  local algorithm = algorithm_of(state)
  local rules = algorithm.rules
  local decision = new_decision(state, math.max(now, state.clock), #state.limits)
  local at = decision.now
  for i, s in ipairs(state.limits) do
    local slot_at = rules.earliest(s.limit, s.slots, log, decision.now, cost)
    decision.limits[i].retry_after = slot_at - decision.now
    if slot_at > at then
      at = slot_at
      decision.binding = i
    end
  end
  if state.paused_until > decision.now then
    decision.paused_until = state.paused_until
    at = math.max(at, state.paused_until)
  end
  if #state.limits > 0 then
    at = protected_slot(rules, state.remembered, state.limits[1], log, at, cost)
  end
  decision.wait = at - decision.now
  decision.allowed = decision.wait == 0
  decision.refusal = decision.allowed and k_refusal.none or k_refusal.later
  summarise(decision, rules, state.limits, log, decision.allowed)
  decision.reset_after = math.max(decision.reset_after,
                                  retention_after(algorithm, state, decision.now),
                                  remembered_after(rules, state, log, decision.now))
  -- core::settle_server_word
  local open = budget_open(state.server, at, cost)
  if open > at then
    decision.budget_until = open
    decision.wait = open - decision.now
    decision.allowed = false
    decision.refusal = k_refusal.later
  end
  if #state.limits == 0 then
    -- A key that holds only what a server said has no limit to count from: what its budget
    -- has left, if it has one.
    decision.remaining = budget_standing(state.server, decision.now) and math.huge or 0
  end
  apply_server_word(decision, state.server)
  return decision
end

-- core::read_earlier_version: reads `state` as stored by a version that did not keep what
-- a key granted: for an algorithm that counts it, any number, and each limit's slots as they
-- mean now.
local function read_earlier_version(state)
  local algorithm = algorithm_of(state)
  if not algorithm.counts_granted then
    return
  end
  state.granted = k_max_window_count
  for _, list in ipairs({state.limits, state.remembered}) do
    for _, s in ipairs(list) do
      algorithm.rules.read_earlier_version(s)
    end
  end
end

-- core::holds_server_word: whether `state` holds what a server said that still runs at
-- `now`: a pause, a server budget, a grant awaiting its answer.
local function holds_server_word(state, now)
  return state.paused_until > now or server_word_until(state.server, now) > now
end

-- core::limits_fresh: whether the limits of `state` are fresh at `now`, whatever its pause
-- and server word.
local function limits_fresh(state, log, now)
  local algorithm = algorithm_of(state)
  local rules = algorithm.rules
  local time = math.max(now, state.clock)
  if retention_after(algorithm, state, time) > 0 then
    return false
  end
  if remembered_after(rules, state, log, time) ~= 0 then
    return false
  end
  for _, s in ipairs(state.limits) do
    local _, reset_after = rules.usage(s.limit, s.slots, log, time)
    if reset_after ~= 0 then
      return false
    end
  end
  return true
end

-- core::is_fresh: whether forgetting the key at `now` would change no decision.
local function is_fresh(state, log, now)
  return not holds_server_word(state, math.max(now, state.clock)) and
           limits_fresh(state, log, now)
end

-- core::pause: pauses the key from its clock for `duration`; returns the end of the pause.
local function pause(state, now, duration)
  state.clock = math.max(state.clock, now)
  local until_time
  if duration >= k_max_time - state.clock then
    until_time = k_max_time
  else
    until_time = state.clock + duration
  end
  state.paused_until = math.max(state.paused_until, until_time)
  return state.paused_until
end

-- core::observe: applies what a server answered at `now` (`observation`: pause, standings
-- {{remaining, reset_after}...}, grant or nil, policies '' for none); returns the end of the
-- key's pause.
local function observe(state, now, observation)
  state.clock = math.max(state.clock, now)
  if observation.pause > 0 then
    pause(state, state.clock, observation.pause)
  end
  observe_server(state.server, state.clock, observation.standings, observation.grant)
  if observation.policies ~= '' then
    state.server.policies = observation.policies
  end
  learn_from_answer(state.server, state.limits, observation, state.clock)
  return state.paused_until
end
