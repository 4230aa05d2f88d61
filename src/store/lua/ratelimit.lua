-- One call of this script is one atomic operation on one key, mirroring src/core/decide.cpp.
--   KEYS[1]   the key's hash: algorithm, clock, limits ("count period burst s1 s2 s3" per
--             limit of the last call, in order), log_period (sliding log: the longest
--             period a call named); KEYS[2..3] its sliding log, BASE:t and BASE:c
--   ARGV[1]   decide | give_back | inspect | reset
--   ARGV[2]   now in microseconds, for the conformance test only; empty: the server's TIME.
--             With an explicit now nothing expires, so that a test's clock need not be real.
--   decide    ARGV[3..] algorithm cost reserve(0|1) max_wait(-1: none) chosen(0|1) n,
--             n x (count period burst) -> {'ok', algorithm, allowed, now, wait, binding,
--             remaining, reset_after, at, n, n x (remaining, reset_after, retry_after,
--             marker), refusal} or {'conflict', stored algorithm}. A key made by another
--             algorithm keeps its own unless the algorithm was chosen (then 'conflict').
--   decide, give_back and inspect reply {'damaged'} for a key whose values this script did
--   not write (another type, unreadable fields, values out of bounds), and {'clock'} when
--   the clock is past the latest time the store counts
--   give_back ARGV[3..] algorithm at cost n, n x (count period burst), n x marker -> {'ok'}
--   inspect   ARGV[3] cost (empty: 1) -> {'none'} or {'ok', algorithm, clock, now, allowed,
--             wait, binding, n, n x (count period burst s1 s2 s3 remaining reset_after
--             retry_after), log_period}, as core::inspect for a try of that cost
--   reset     -> 1 if the key existed, else 0
-- Every stored value expires when its state is a fresh key's again, so nothing needs gc.

local function decide()
  local algorithm = ARGV[3]
  local cost = tonumber(ARGV[4])
  local reserve = ARGV[5] == '1'
  local max_wait = tonumber(ARGV[6])
  local chosen = ARGV[7] == '1'
  local limits = read_limits(8)
  local state, problem = load()
  if problem or not logs_intact() then
    return damaged()
  end
  if state and (state.algorithm ~= algorithm or not holds_limits(state, limits)) then
    -- A fresh key belongs to no algorithm and holds nothing for other limits (it would
    -- expire now): forgotten, as gc would. A key in use keeps its own algorithm, unless the
    -- call chose another.
    local stored_rule = rules[state.algorithm]
    local stored_clock = math.max(now, state.clock)
    local limits_of, states_of = {}, {}
    for i, st in ipairs(state.limits) do
      limits_of[i], states_of[i] = st.limit, st.slots
    end
    local _, reset_after = summarise(state.algorithm, limits_of, states_of, redis_log(base),
                                     stored_clock)
    if stored_rule.shares_state and #states_of > 0 then
      reset_after = math.max(reset_after, states_of[1][1] + state.log_period - stored_clock)
    end
    if reset_after <= 0 then
      local by_time, by_cost = log_keys(base)
      redis.call('DEL', base, by_time, by_cost)
      state = nil
    elseif state.algorithm == algorithm then
      -- In use: its state carries over to the limits of this call.
    elseif chosen then
      return {'conflict', state.algorithm}
    else
      algorithm = state.algorithm
    end
  end
  local rule = rules[algorithm]
  local log = redis_log(base)
  local clock = math.max(now, state and state.clock or 0)
  local states = states_for(rule, state, limits, clock)
  local log_period = 0
  if rule.shares_state then
    log_period = math.max(state and state.log_period or 0, longest_period(limits))
  end

  local at, accept_from, refusing, binding = clock, -math.huge, nil, 1
  local retry = {}
  for i, limit in ipairs(limits) do
    local slot_at, slot_accept_from = rule.earliest(limit, states[i], log, clock, cost)
    retry[i] = slot_at - clock
    if slot_at > at then
      at, binding = slot_at, i
    end
    if slot_accept_from and slot_accept_from > accept_from then
      accept_from = slot_accept_from
      if accept_from > clock then
        refusing = i
      end
    end
  end

  local wait = at - clock
  local allowed
  if not reserve then
    allowed = wait == 0
  elseif refusing then
    -- A full queue refuses the request however long the caller would wait.
    allowed, binding = false, refusing
    wait = math.max(wait, accept_from - clock)
  else
    allowed = max_wait < 0 or wait <= max_wait
  end

  local refusal = 0 -- core::Refusal: none, later, timeout, full, too_far
  if not reserve then
    refusal = allowed and 0 or 1
  elseif refusing then
    refusal = 3
  elseif not allowed then
    refusal = 2
  end
  if allowed then
    -- Reservations could push a schedule past what the store counts exactly: such a slot
    -- is refused, like one beyond the caller's wait (core::fits_within_bounds).
    for i, limit in ipairs(limits) do
      local s = states[i]
      if at > k_max_time or math.max(at, s[1]) + cost * limit.interval > k_max_time or
          (not takes_burst(algorithm) and s[2] + cost > k_max_total) then
        allowed, refusal, binding = false, 4, i
        break
      end
    end
  end
  local markers = {}
  if allowed then
    if rule.shares_state then
      local retention = retention_limit(state and state.log_period or 0, limits)
      local marker = rule.take(retention, states[1], log, clock, at, cost)
      for i = 1, #limits do
        states[i] = {states[1][1], states[1][2], states[1][3]}
        markers[i] = marker
      end
    else
      for i, limit in ipairs(limits) do
        markers[i] = rule.take(limit, states[i], log, clock, at, cost)
      end
    end
  end
  local remaining, reset_after, per_limit, least = summarise(algorithm, limits, states, log, clock)
  if allowed and wait == 0 then
    -- Granted at once, every limit agreeing: the one with the least remaining.
    binding = least
  end
  -- The key keeps the limits of its last call; a denied one writes only when it changed them.
  if allowed or (state and not holds_limits(state, limits)) then
    save_all(algorithm, clock, limits, states, log_period, log)
  end
  local reply = {'ok', algorithm, allowed and 1 or 0, clock, wait, binding - 1, remaining,
                 reset_after, at, #limits}
  for i = 1, #limits do
    for _, value in ipairs({per_limit[i][1], per_limit[i][2], retry[i], markers[i] or 0}) do
      reply[#reply + 1] = value
    end
  end
  reply[#reply + 1] = refusal
  return reply
end

local function give_back()
  local algorithm = ARGV[3]
  local at = tonumber(ARGV[4])
  local cost = tonumber(ARGV[5])
  local limits, next_arg = read_limits(6)
  local state, problem = load()
  if problem or not logs_intact() then
    return damaged()
  end
  if not state or state.algorithm ~= algorithm then
    return {'ok'} -- reset meanwhile: there is nothing to give back to
  end
  local rule = rules[algorithm]
  local log = redis_log(base)
  local clock = math.max(state.clock, now)
  local states = states_for(rule, state, limits, clock)
  local log_period = 0
  if rule.shares_state then
    log_period = state.log_period
    if #limits > 0 then
      rule.give_back(retention_limit(log_period, limits), states[1], log, at, cost,
                     tonumber(ARGV[next_arg]))
      for i = 2, #limits do
        states[i] = {states[1][1], states[1][2], states[1][3]}
      end
    end
  else
    for i, limit in ipairs(limits) do
      rule.give_back(limit, states[i], log, at, cost, tonumber(ARGV[next_arg + i - 1]))
    end
  end
  save_all(algorithm, clock, limits, states, log_period, log)
  return {'ok'}
end

local function inspect()
  local state, problem = load()
  if problem or (state and not logs_intact()) then
    return damaged()
  end
  if not state then
    return {'none'}
  end
  local cost = tonumber(ARGV[3] or '') or 1
  local clock = math.max(now, state.clock)
  local rule = rules[state.algorithm]
  local log = redis_log(base)
  local limits, states = {}, {}
  for i, stored in ipairs(state.limits) do
    limits[i], states[i] = stored.limit, stored.slots
  end
  local at, binding, retry = clock, 1, {}
  for i, limit in ipairs(limits) do
    local slot_at = rule.earliest(limit, states[i], log, clock, cost)
    retry[i] = slot_at - clock
    if slot_at > at then
      at, binding = slot_at, i
    end
  end
  local wait = at - clock
  local _, _, per_limit, least = summarise(state.algorithm, limits, states, log, clock)
  if wait == 0 then
    binding = least
  end
  local reply = {'ok', state.algorithm, state.clock, clock, wait == 0 and 1 or 0, wait,
                 binding - 1, #limits}
  for i, limit in ipairs(limits) do
    local s = states[i]
    for _, value in ipairs({limit.count, limit.period, limit.burst, s[1], s[2], s[3],
                            per_limit[i][1], per_limit[i][2], retry[i]}) do
      reply[#reply + 1] = value
    end
  end
  reply[#reply + 1] = state.log_period
  return reply
end

-- Whatever the key holds, a damaged value included, and the logs of earlier versions.
local function reset()
  local state = load()
  local keys = {base, log_keys(base)}
  for _, stored in ipairs(state and state.limits or {}) do
    local by_time, by_cost = legacy_log_keys(base, stored.limit.period)
    keys[#keys + 1] = by_time
    keys[#keys + 1] = by_cost
  end
  local removed = redis.call('DEL', unpack(keys))
  return removed > 0 and 1 or 0
end

-- A clock past the latest time the store counts (core::k_max_time) decides nothing.
if op ~= 'reset' and now > k_max_time then
  return {'clock'}
end

if op == 'decide' then
  return decide()
elseif op == 'give_back' then
  return give_back()
elseif op == 'inspect' then
  return inspect()
elseif op == 'reset' then
  return reset()
end
return redis.error_reply('unknown operation ' .. tostring(op))
