-- One call of this script is one atomic operation on one key, mirroring src/core/decide.cpp.
--   KEYS[1]   the key's hash: algorithm, clock, limits ("count period burst s1 s2 s3" per
--             limit of the last call, in order), log_period (sliding log: the longest
--             period a call named); KEYS[2..3] its sliding log, BASE:t and BASE:c
--   ARGV[1]   decide | give_back | inspect | reset
--   ARGV[2]   now in microseconds, for the conformance test only; empty: the server's TIME.
--             With an explicit now nothing expires, so that a test's clock need not be real.
--   decide    ARGV[3..] algorithm cost reserve(0|1) max_wait(-1: none) n, n x (count
--             period burst) -> {'ok', allowed, now, wait, binding, remaining, reset_after,
--             at, n, n x (remaining, reset_after, retry_after, marker), refusal}
--             or {'conflict', stored algorithm}
--   decide, give_back and inspect reply {'damaged'} for a key whose values this script did
--   not write (another type, unreadable fields, values out of bounds), and {'clock'} when
--   the clock is past the latest time the store counts
--   give_back ARGV[3..] algorithm at cost n, n x (count period burst), n x marker -> {'ok'}
--   inspect   ARGV[3] cost (empty: 1) -> {'none'} or {'ok', algorithm, clock, now, allowed,
--             wait, binding, n, n x (count period burst s1 s2 s3 remaining reset_after
--             retry_after), log_period}, as core::inspect for a try of that cost
--   reset     -> 1 if the key existed, else 0
-- Every stored value expires when its state is a fresh key's again, so nothing needs gc.

local base = KEYS[1]
local op = ARGV[1]
local explicit_now = ARGV[2] ~= ''

local function server_time()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local now
if explicit_now then
  now = tonumber(ARGV[2])
else
  now = server_time()
end

local function make_limit(count, period, burst)
  return {count = count, period = period, burst = burst, interval = ceil_div(period, count)}
end

-- Whether a stored limit and its slots are within the bounds that core::within_bounds
-- applies, so that no arithmetic below leaves the exact integers. A bucket's refill may
-- pass twice the longest period by a microsecond per unit of burst: the periods here are
-- rounded up to whole microseconds.
local function within_bounds(algorithm, limit, slots)
  local count, period, burst = limit.count, limit.period, limit.burst
  if not (is_exact(count) and is_exact(period) and is_exact(burst)) or count < 1 or
      count > k_max_count or period < 1 or period > k_max_duration or count > period * 1000 or
      burst < 1 or burst > k_max_total then
    return false
  end
  if takes_burst(algorithm) then
    return burst * ceil_div(period, count) <= 2 * k_max_duration + burst and
               is_time(slots[1]) and is_time(slots[2]) and is_time(slots[3])
  end
  -- The fixed window keeps the time of its latest grant in its third slot.
  local third = algorithm == 'fixed-window' and is_time(slots[3]) or is_total(slots[3])
  return burst <= k_max_count and is_time(slots[1]) and is_total(slots[2]) and third
end

-- The stored state, or nil for a fresh key; nil and 'damaged' for a value it cannot read,
-- one of another type included (set by hand, say).
local function load()
  local kind = redis.call('TYPE', base).ok
  if kind == 'none' then
    return nil
  elseif kind ~= 'hash' then
    return nil, 'damaged'
  end
  local flat = redis.call('HMGET', base, 'algorithm', 'clock', 'limits', 'log_period')
  if not flat[1] and not flat[2] and not flat[3] then
    return nil
  end
  local state = {algorithm = flat[1], clock = tonumber(flat[2]), limits = {},
                 log_period = tonumber(flat[4] or '0')}
  if not state.log_period then
    return nil, 'damaged'
  end
  local values = {}
  for word in string.gmatch(flat[3] or '', '%S+') do
    values[#values + 1] = tonumber(word)
  end
  if not rules[state.algorithm or ''] or not is_time(state.clock) or #values == 0 or
      #values % 6 ~= 0 then
    return nil, 'damaged'
  end
  for i = 1, #values, 6 do
    local limit = {count = values[i], period = values[i + 1], burst = values[i + 2]}
    local slots = {values[i + 3], values[i + 4], values[i + 5]}
    if not within_bounds(state.algorithm, limit, slots) then
      return nil, 'damaged'
    end
    state.limits[#state.limits + 1] = {
      limit = make_limit(limit.count, limit.period, limit.burst),
      slots = slots,
    }
  end
  return state
end

-- The caller names the key as the user knows it.
local function damaged()
  return {'damaged'}
end

-- Limits from ARGV[first..]: n, then n triples.
local function read_limits(first)
  local n = tonumber(ARGV[first])
  local limits = {}
  for i = 1, n do
    local at = first + 3 * (i - 1)
    limits[i] = make_limit(tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]))
  end
  return limits, first + 1 + 3 * n
end

-- The slots of each requested limit: a stored limit equal to it keeps its own; any other
-- is derived from the stored ones (the rules' carry).
local function states_for(rule, state, limits, now)
  local stored = state and state.limits or {}
  local states = {}
  for i, limit in ipairs(limits) do
    for _, st in ipairs(stored) do
      if st.limit.count == limit.count and st.limit.period == limit.period and
          st.limit.burst == limit.burst then
        states[i] = {st.slots[1], st.slots[2], st.slots[3]}
      end
    end
    if not states[i] then
      states[i] = rule.carry(limit, stored, now)
    end
  end
  return states
end

-- Whether the key holds exactly `limits`, in this order.
local function holds_limits(state, limits)
  local stored = state and state.limits or {}
  if #stored ~= #limits then
    return false
  end
  for i, limit in ipairs(limits) do
    local st = stored[i].limit
    if st.count ~= limit.count or st.period ~= limit.period or st.burst ~= limit.burst then
      return false
    end
  end
  return true
end

local function longest_period(limits)
  local longest = 0
  for _, limit in ipairs(limits) do
    longest = math.max(longest, limit.period)
  end
  return longest
end

-- The limit whose period is the log's retention, for the sliding log's take and give_back.
local function retention_limit(log_period, limits)
  local first = limits[1]
  return make_limit(first.count, math.max(longest_period(limits), log_period), first.burst)
end

-- Every key that holds state for `algorithm`.
local function keys_of(algorithm)
  local keys = {base}
  if algorithm == 'sliding-log' then
    local by_time, by_cost = log_keys(base)
    keys[2], keys[3] = by_time, by_cost
  end
  return keys
end

-- Whether the sliding log is sorted sets or absent, as this script writes it.
local function logs_intact()
  local by_time, by_cost = log_keys(base)
  for _, key in ipairs({by_time, by_cost}) do
    local kind = redis.call('TYPE', key).ok
    if kind ~= 'none' and kind ~= 'zset' then
      return false
    end
  end
  return true
end

-- Writes the key's state: the limits of this call and their slots. Keys expire at
-- `fresh_at`, when the state is a fresh key's again.
local function save(algorithm, clock, limits, states, log_period, fresh_at)
  local fields = {}
  for i, limit in ipairs(limits) do
    local s = states[i]
    fields[#fields + 1] = table.concat({int(limit.count), int(limit.period), int(limit.burst),
                                        int(s[1]), int(s[2]), int(s[3])}, ' ')
  end
  redis.call('HSET', base, 'algorithm', algorithm, 'clock', int(clock), 'limits',
             table.concat(fields, ' '), 'log_period', int(log_period))
  local keys = keys_of(algorithm)
  if explicit_now then
    for _, key in ipairs(keys) do
      redis.call('PERSIST', key)
    end
    return
  end
  local ttl = fresh_at - server_time()
  for _, key in ipairs(keys) do
    if ttl <= 0 then
      redis.call('DEL', key)
    else
      -- A millisecond more than the rounding: expiring early could grant too soon.
      redis.call('PEXPIRE', key, ceil_div(ttl, 1000) + 1)
    end
  end
end

-- The standing of `states` at `at_now`: the least remaining, the longest reset_after.
local function summarise(algorithm, limits, states, log, at_now)
  local per_limit = {}
  local remaining, reset_after, least = nil, 0, 1
  for i, limit in ipairs(limits) do
    local left, reset = rules[algorithm].usage(limit, states[i], log, at_now)
    per_limit[i] = {left, reset}
    reset_after = math.max(reset_after, reset)
    if not remaining or left < remaining then
      remaining, least = left, i
    end
  end
  return remaining or -1, reset_after, per_limit, least
end

-- Saves `states` of `limits`; the key expires when each of them is fresh again, and a
-- sliding log once its last grant has left the log's retention.
local function save_all(algorithm, clock, limits, states, log_period, log)
  local _, reset_after = summarise(algorithm, limits, states, log, clock)
  if rules[algorithm].shares_state and #states > 0 then
    reset_after = math.max(reset_after, states[1][1] + log_period - clock)
  end
  save(algorithm, clock, limits, states, log_period, clock + reset_after)
end

local function decide()
  local algorithm = ARGV[3]
  local cost = tonumber(ARGV[4])
  local reserve = ARGV[5] == '1'
  local max_wait = tonumber(ARGV[6])
  local limits = read_limits(7)
  local state, problem = load()
  if problem or not logs_intact() then
    return damaged()
  end
  if state and state.algorithm ~= algorithm then
    -- A fresh key belongs to no algorithm (it would expire now): forgotten, as gc would.
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
    if reset_after > 0 then
      return {'conflict', state.algorithm}
    end
    local by_time, by_cost = log_keys(base)
    redis.call('DEL', base, by_time, by_cost)
    state = nil
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
  local reply = {'ok', allowed and 1 or 0, clock, wait, binding - 1, remaining, reset_after, at,
                 #limits}
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
