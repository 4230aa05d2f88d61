-- One call of this script is one atomic operation on one key, mirroring src/core/decide.cpp.
--   KEYS[1]   the key's hash (BASE): algorithm, clock, limits ("count period burst s1 s2
--             s3" per limit of the last call, in order, then per limit a bucket remembers
--             with its count negated), log_period (sliding log: the longest period a call
--             named)
--   KEYS[2,3] its sliding log, BASE:t and BASE:c (see grant_log.lua)
--   KEYS[4]   its counters, BASE:n (granted, limited, waited_us)
--   KEYS[5..] reset only: the logs of version 1 it asked for (see reset)
--             Every operation takes the four names, whatever the algorithm, and touches no
--             other: Redis Cluster and proxies route a script by the names it declares.
--   ARGV[1]   decide | give_back | inspect | reset | pause | pause_of
--   ARGV[2]   now in microseconds, for the conformance test only; empty: the server's TIME.
--             With an explicit now nothing expires, so that a test's clock need not be real.
--   decide    ARGV[3..] algorithm cost reserve(0|1) max_wait(-1: none) chosen(0|1) n,
--             n x (count period burst) -> {'ok', algorithm, allowed, now, wait, binding,
--             remaining, reset_after, at, n, n x (remaining, reset_after, retry_after,
--             marker), refusal, paused_until (0: no pause runs)} or {'conflict', stored
--             algorithm}. A key made by another algorithm keeps its own unless the
--             algorithm was chosen (then 'conflict'). A decision adds itself to the counters.
--   decide, give_back and inspect reply {'damaged'} for a key whose values this script did
--   not write (another type, unreadable fields, values out of bounds), and {'clock'} when
--   the clock is past the latest time the store counts
--   give_back ARGV[3..] algorithm at cost n, n x (count period burst), n x marker -> {'ok'}
--   inspect   ARGV[3] cost (empty: 1) -> {'none'} or {'ok', algorithm, clock, now, allowed,
--             wait, binding, n, n x (count period burst s1 s2 s3 remaining reset_after
--             retry_after), log_period, paused_until, granted, limited, waited_us, m,
--             m x (count period burst s1 s2 s3 reset_after)}, as core::inspect for a try of
--             that cost, the counters, and the limits the key remembers; a key that holds
--             only a pause has the algorithm '' and no limits
--   reset     -> 1 if the key existed (its state or its counters), else 0; or, deleting
--             nothing, {'declare', period...}: call again with the logs of version 1 of
--             these periods (BASE:t:PERIOD, BASE:c:PERIOD) in KEYS[5..]
--   pause     ARGV[3] duration -> {'ok', now, paused_until}; the key holds at least that
--             pause (core::pause), created with it alone when missing: whatever of KEYS
--             expires before the pause ends is kept until then.
--   pause_of  -> {'ok', now, paused_until (0: none runs)}, reading only KEYS[1]
--   count     ARGV[3] granted(0|1) ARGV[4] wait -> {'ok'}: a request decided outside decide
--             (a command started on the run slots, or refused one) adds itself to the
--             counters, as a decision does
-- A key's pause is the field paused_until of its hash, which no other operation writes.
-- Every stored value expires when its state is a fresh key's again, so nothing needs gc.

local function decide()
  local algorithm = ARGV[3]
  local cost = tonumber(ARGV[4])
  local reserve = ARGV[5] == '1'
  local max_wait = tonumber(ARGV[6])
  local chosen = ARGV[7] == '1'
  local limits = read_limits(8)
  local state, problem = load()
  if problem or not logs_intact() or not counters_intact() then
    return damaged()
  end
  if state and state.algorithm and
      (state.algorithm ~= algorithm or not holds_limits(state, limits)) then
    -- A fresh key belongs to no algorithm and holds nothing for other limits (it would
    -- expire now): forgotten, as gc would, but for a pause it holds. A key in use keeps its
    -- own algorithm, unless the call chose another.
    local stored_rule = rules[state.algorithm]
    local stored_clock = math.max(now, state.clock)
    local limits_of, states_of = {}, {}
    for i, st in ipairs(state.limits) do
      limits_of[i], states_of[i] = st.limit, st.slots
    end
    local stored_log = redis_log(log_by_time, log_by_cost)
    local _, reset_after = summarise(state.algorithm, limits_of, states_of, stored_log,
                                     stored_clock)
    reset_after = math.max(reset_after, remembered_after(state.algorithm, state.remembered,
                                                         stored_log, stored_clock))
    if stored_rule.shares_state and #states_of > 0 then
      reset_after = math.max(reset_after, states_of[1][1] + state.log_period - stored_clock)
    end
    if reset_after <= 0 then
      if state.paused_until > stored_clock then
        redis.call('DEL', log_by_time, log_by_cost)
        state = {algorithm = nil, clock = state.clock, limits = {}, remembered = {},
                 log_period = 0, paused_until = state.paused_until}
      else
        redis.call('DEL', base, log_by_time, log_by_cost)
        state = nil
      end
    elseif state.algorithm == algorithm then
      -- In use: its state carries over to the limits of this call.
    elseif chosen then
      return {'conflict', state.algorithm}
    else
      algorithm = state.algorithm
    end
  end
  local rule = rules[algorithm]
  local log = redis_log(log_by_time, log_by_cost)
  local clock = math.max(now, state and state.clock or 0)
  local states = states_for(rule, state, limits, clock)
  local log_period = 0
  if rule.shares_state then
    log_period = math.max(state and state.log_period or 0, longest_period(limits))
  end

  local at, accept_from, refusing, binding = clock, -math.huge, nil, 1
  local retry = {}
  -- A queue holds the reservations after the key opens: a pause's end, or now.
  local opens = math.max(clock, state and state.paused_until or 0)
  for i, limit in ipairs(limits) do
    local slot_at, slot_accept_from = rule.earliest(limit, states[i], log, clock, cost)
    retry[i] = slot_at - clock
    if slot_at > at then
      at, binding = slot_at, i
    end
    if slot_accept_from and slot_accept_from > accept_from then
      accept_from = slot_accept_from
      if accept_from > opens then
        refusing = i
      end
    end
  end

  local paused_until = state and state.paused_until or 0
  if paused_until > clock then
    -- Nothing is granted before the pause ends, whatever the limits would allow.
    at = math.max(at, paused_until)
  else
    paused_until = 0
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
  -- A bucket remembers the limits this call does not name, and they count its grant too.
  local remembered = unnamed_by(rule, state, limits)
  if allowed and #remembered > 0 then
    local fitting = {}
    for _, st in ipairs(remembered) do
      -- One that could not count it within the bounds (a debt past 2116) is forgotten.
      if math.max(at, st.slots[1]) + cost * st.limit.interval <= k_max_time then
        rule.take(st.limit, st.slots, log, clock, at, cost)
        fitting[#fitting + 1] = st
      end
    end
    remembered = fitting
  end
  local writes = allowed or (state and not holds_limits(state, limits))
  if writes then
    remembered = forget_fresh(algorithm, remembered, log, clock)
  else
    remembered = state and state.remembered or {}
  end
  local remaining, reset_after, per_limit, least = summarise(algorithm, limits, states, log, clock)
  reset_after = math.max(reset_after, remembered_after(algorithm, remembered, log, clock))
  if allowed and wait == 0 then
    -- Granted at once, every limit agreeing: the one with the least remaining.
    binding = least
  end
  if paused_until > 0 then
    remaining, reset_after = 0, math.max(reset_after, paused_until - clock)
  end
  -- The key keeps the limits of its last call; a denied one writes only when it changed them.
  if writes then
    save_all(algorithm, clock, limits, states, log_period, log, paused_until, remembered)
  end
  count(allowed, wait)
  local reply = {'ok', algorithm, allowed and 1 or 0, clock, wait, binding - 1, remaining,
                 reset_after, at, #limits}
  for i = 1, #limits do
    for _, value in ipairs({per_limit[i][1], per_limit[i][2], retry[i], markers[i] or 0}) do
      reply[#reply + 1] = value
    end
  end
  reply[#reply + 1] = refusal
  reply[#reply + 1] = paused_until
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
    return {'ok'} -- reset meanwhile (or only paused since): there is nothing to give back to
  end
  local rule = rules[algorithm]
  local log = redis_log(log_by_time, log_by_cost)
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
  local remembered = forget_fresh(algorithm, unnamed_by(rule, state, limits), log, clock)
  save_all(algorithm, clock, limits, states, log_period, log, state.paused_until, remembered)
  return {'ok'}
end

local function inspect()
  local state, problem = load()
  if problem or (state and not logs_intact()) or not counters_intact() then
    return damaged()
  end
  if not state then
    return {'none'}
  end
  local cost = tonumber(ARGV[3] or '') or 1
  local clock = math.max(now, state.clock)
  local rule = rules[state.algorithm or 'token-bucket'] -- none is used without limits
  local log = redis_log(log_by_time, log_by_cost)
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
  at = math.max(at, state.paused_until)
  local wait = at - clock
  local _, _, per_limit, least = summarise(state.algorithm, limits, states, log, clock)
  if wait == 0 and #limits > 0 then
    binding = least
  end
  local reply = {'ok', state.algorithm or '', state.clock, clock, wait == 0 and 1 or 0, wait,
                 #limits > 0 and binding - 1 or 0, #limits}
  for i, limit in ipairs(limits) do
    local s = states[i]
    for _, value in ipairs({limit.count, limit.period, limit.burst, s[1], s[2], s[3],
                            per_limit[i][1], per_limit[i][2], retry[i]}) do
      reply[#reply + 1] = value
    end
  end
  reply[#reply + 1] = state.log_period
  reply[#reply + 1] = state.paused_until
  for _, value in ipairs({read_counters()}) do
    reply[#reply + 1] = value
  end
  reply[#reply + 1] = #state.remembered
  for _, st in ipairs(state.remembered) do
    local limit, s = st.limit, st.slots
    local _, reset = rule.usage(limit, s, log, clock)
    for _, value in ipairs({limit.count, limit.period, limit.burst, s[1], s[2], s[3], reset}) do
      reply[#reply + 1] = value
    end
  end
  return reply
end

local function pause()
  local duration = tonumber(ARGV[3])
  local state, problem = load()
  if problem then
    return damaged()
  end
  local clock = math.max(now, state and state.clock or 0)
  local paused_until = math.max(state and state.paused_until or 0,
                                math.min(clock + duration, k_max_time))
  if not state and paused_until <= clock then
    return {'ok', clock, paused_until} -- nothing to hold: no key is made for it
  end
  redis.call('HSET', base, 'clock', int(clock), 'paused_until', int(paused_until))
  if explicit_now then
    return {'ok', clock, paused_until}
  end
  -- Nothing of the key may expire before the pause ends (a new key's hash has no expiry
  -- yet); what expires later keeps its expiry.
  local ttl = ceil_div(paused_until - server_time(), 1000) + 1
  for i, key in ipairs(KEYS) do
    local left = redis.call('PTTL', key)
    if (left >= 0 and left < ttl) or (i == 1 and not state) then
      redis.call('PEXPIRE', key, ttl)
    end
  end
  return {'ok', clock, paused_until}
end

local function pause_of()
  local flat = redis.call('HMGET', base, 'clock', 'paused_until')
  local clock = math.max(now, tonumber(flat[1] or '0') or 0)
  local paused_until = tonumber(flat[2] or '0') or 0
  return {'ok', clock, paused_until > clock and paused_until or 0}
end

local function add_to_counters()
  if not counters_intact() then
    return damaged()
  end
  count(ARGV[3] == '1', tonumber(ARGV[4]))
  return {'ok'}
end

-- Whatever the key holds, a damaged value included, and the logs of earlier versions:
-- version 1 kept a sliding log per limit (BASE:t:PERIOD, BASE:c:PERIOD), for the periods of
-- the limits its hash holds. Only this script knows those periods atomically, and only the
-- caller can declare names: when the names of a stored period are not among KEYS[5..],
-- nothing is deleted and the reply asks for them, and the caller calls again declaring them.
-- Only a sliding-log key had such logs: a key's algorithm changes only once it is fresh,
-- when the logs of version 1 expired with it.
local function reset()
  local state = load()
  if state and state.algorithm == 'sliding-log' then
    local declared = {}
    for i = 5, #KEYS do
      declared[KEYS[i]] = true
    end
    local periods, missing = {}, false
    for i, stored in ipairs(state.limits) do
      local by_time, by_cost = legacy_log_names(base, stored.limit.period)
      periods[i + 1] = stored.limit.period
      missing = missing or not declared[by_time] or not declared[by_cost]
    end
    if missing then
      periods[1] = 'declare'
      return periods
    end
  end
  local removed = redis.call('DEL', unpack(KEYS))
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
elseif op == 'pause' then
  return pause()
elseif op == 'pause_of' then
  return pause_of()
elseif op == 'count' then
  return add_to_counters()
end
return redis.error_reply('unknown operation ' .. tostring(op))
