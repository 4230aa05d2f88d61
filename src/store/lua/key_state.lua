-- The key's stored state for ratelimit.lua, which follows this part: the call's clock, the
-- state loaded and checked against the bounds, the limits of a call, and saving with
-- the expiry of a fresh key's state.

-- Every name an operation touches is declared in KEYS, as Redis Cluster and proxies require:
-- the key's hash, its sliding log (the same names whatever the algorithm, so that a call
-- of one algorithm can read or drop what another left), and its counters (store::KeyCounters:
-- granted, limited, waited_us), a hash apart from the state so that they outlive it.
local base, log_by_time, log_by_cost, counters_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- store::k_counter_retention: the counters expire once no decision has touched them for so
-- long, in milliseconds.
local k_counter_retention_ms = 31 * 24 * 3600 * 1000
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
  local flat = redis.call('HMGET', base, 'algorithm', 'clock', 'limits', 'log_period',
                          'paused_until')
  if not flat[1] and not flat[2] and not flat[3] then
    return nil
  end
  local paused_until = tonumber(flat[5] or '0')
  if not paused_until or not is_time(paused_until) then
    return nil, 'damaged'
  end
  if not flat[1] and not flat[3] then
    -- Only a pause (`ratelimit pause` on a key never used): no algorithm, no limits yet.
    local clock = tonumber(flat[2])
    if not is_time(clock) or flat[4] then
      return nil, 'damaged'
    end
    return {algorithm = nil, clock = clock, limits = {}, remembered = {}, log_period = 0,
            paused_until = paused_until, granted = 0}
  end
  local state = {algorithm = flat[1], clock = tonumber(flat[2]), limits = {}, remembered = {},
                 log_period = tonumber(flat[4] or '0'), paused_until = paused_until}
  if not state.log_period then
    return nil, 'damaged'
  end
  local values = {}
  for word in string.gmatch(flat[3] or '', '%S+') do
    values[#values + 1] = tonumber(word)
  end
  if not rules[state.algorithm or ''] or not is_time(state.clock) or #values < 6 or
      #values % 6 > 1 then
    return nil, 'damaged'
  end
  -- A window key's limits follow what it has granted (core::KeyState::granted); a key
  -- written before it was kept is read as core::read_earlier_version reads it, once its
  -- limits are.
  local first, earlier = 1, false
  state.granted = 0
  if #values % 6 == 1 then
    state.granted, first = values[1], 2
    if not (is_exact(state.granted) and state.granted >= 0 and
            state.granted <= k_max_window_count) then
      return nil, 'damaged'
    end
  elseif rules[state.algorithm].counts_granted then
    state.granted, earlier = k_max_window_count, true
  end
  -- The limits the key remembers (core::KeyState::remembered) follow, their count negated.
  for i = first, #values, 6 do
    local remembered = values[i] and values[i] < 0
    local limit = {count = remembered and -values[i] or values[i], period = values[i + 1],
                   burst = values[i + 2]}
    local slots = {values[i + 3], values[i + 4], values[i + 5]}
    if not within_bounds(state.algorithm, limit, slots) or
        (not remembered and #state.remembered > 0) then
      return nil, 'damaged'
    end
    local list = remembered and state.remembered or state.limits
    list[#list + 1] = {limit = make_limit(limit.count, limit.period, limit.burst), slots = slots}
  end
  if #state.limits == 0 or (#state.remembered > 0 and not rules[state.algorithm].remembers_unnamed) then
    return nil, 'damaged'
  end
  if earlier then
    for _, list in ipairs({state.limits, state.remembered}) do
      for _, st in ipairs(list) do
        rules[state.algorithm].read_earlier_version(st)
      end
    end
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

local function same_limit(a, b)
  return a.count == b.count and a.period == b.period and a.burst == b.burst
end

local function find_limit(stored, limit)
  for _, st in ipairs(stored) do
    if same_limit(st.limit, limit) then
      return st
    end
  end
  return nil
end

-- The slots of each requested limit: a stored limit equal to it, named by the last call or
-- remembered, keeps its own; any other is derived from all the stored ones (the rules'
-- carry).
local function states_for(rule, state, limits, now)
  local stored = state and state.limits or {}
  local remembered = state and state.remembered or {}
  local granted = state and state.granted or 0
  local every = nil
  local states = {}
  for i, limit in ipairs(limits) do
    -- A shared state is the key's: its remembered limits keep only what protects them.
    local st = find_limit(stored, limit) or
                   (not rule.shares_state and find_limit(remembered, limit) or nil)
    if st then
      states[i] = {st.slots[1], st.slots[2], st.slots[3]}
    elseif #remembered == 0 then
      states[i] = rule.carry(limit, stored, now, granted)
    else
      if not every then
        every = {}
        for _, list in ipairs({stored, remembered}) do
          for _, s in ipairs(list) do
            every[#every + 1] = s
          end
        end
      end
      states[i] = rule.carry(limit, every, now, granted)
    end
  end
  return states
end

-- core::k_max_remembered
local k_max_remembered = 16

-- What the key remembers after a call naming `limits`: every stored limit it does not name,
-- those of the last call first (copies).
local function unnamed_by(rule, state, limits)
  local unnamed = {}
  if not rule.remembers_unnamed or not state then
    return unnamed
  end
  for _, list in ipairs({state.limits, state.remembered}) do
    for _, st in ipairs(list) do
      local named = false
      for _, limit in ipairs(limits) do
        named = named or same_limit(st.limit, limit)
      end
      if not named then
        unnamed[#unnamed + 1] = {limit = st.limit, slots = {st.slots[1], st.slots[2], st.slots[3]}}
      end
    end
  end
  return unnamed
end

-- Those of `remembered` the key still needs at `at_now` (by default those that hold
-- something), at most k_max_remembered.
local function forget_fresh(algorithm, remembered, log, at_now)
  local rule = rules[algorithm]
  local kept = {}
  for _, st in ipairs(remembered) do
    local keeps
    if rule.keeps_remembered then
      keeps = rule.keeps_remembered(st, log, at_now)
    else
      local _, reset = rule.usage(st.limit, st.slots, log, at_now)
      keeps = reset > 0
    end
    if keeps and #kept < k_max_remembered then
      kept[#kept + 1] = st
    end
  end
  return kept
end

-- Until the remembered limits hold nothing.
local function remembered_after(algorithm, remembered, log, at_now)
  local after = 0
  for _, st in ipairs(remembered or {}) do
    local _, reset = rules[algorithm].usage(st.limit, st.slots, log, at_now)
    after = math.max(after, reset)
  end
  return after
end

-- `at`, moved on as long as a grant of `cost` there would leave the grants that one of
-- `remembered` judged with more than its N (the rules' protect); `s` is the call's state.
local function protected_slot(rule, remembered, s, log, at, cost)
  if not rule.protect then
    return at
  end
  local moved = true
  while moved do
    moved = false
    for _, st in ipairs(remembered) do
      local later = rule.protect(st, s, log, at, cost)
      if later > at then
        at, moved = later, true
      end
    end
  end
  return at
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
  if algorithm == 'sliding-log' then
    return {base, log_by_time, log_by_cost}
  end
  return {base}
end

-- Whether the sliding log is sorted sets or absent, as this script writes it.
local function logs_intact()
  for _, key in ipairs({log_by_time, log_by_cost}) do
    local kind = redis.call('TYPE', key).ok
    if kind ~= 'none' and kind ~= 'zset' then
      return false
    end
  end
  return true
end

-- Writes the key's state: the limits of this call and their slots, then those it
-- remembers. Keys expire at `fresh_at`, when the state is a fresh key's again.
local function save(algorithm, clock, limits, states, log_period, fresh_at, remembered, granted)
  local fields = {}
  if rules[algorithm].counts_granted then
    fields[1] = int(granted or 0)
  end
  for i, limit in ipairs(limits) do
    local s = states[i]
    fields[#fields + 1] = table.concat({int(limit.count), int(limit.period), int(limit.burst),
                                        int(s[1]), int(s[2]), int(s[3])}, ' ')
  end
  for _, st in ipairs(remembered or {}) do
    local limit, s = st.limit, st.slots
    fields[#fields + 1] = table.concat({int(-limit.count), int(limit.period), int(limit.burst),
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

-- Saves `states` of `limits` and the `remembered` limits; the key expires when each of them
-- is fresh again, a sliding log once its last grant has left the log's retention, and not
-- before its pause ends.
local function save_all(algorithm, clock, limits, states, log_period, log, paused_until,
                        remembered, granted)
  local _, reset_after = summarise(algorithm, limits, states, log, clock)
  reset_after = math.max(reset_after, remembered_after(algorithm, remembered, log, clock))
  if rules[algorithm].shares_state and #states > 0 then
    reset_after = math.max(reset_after, states[1][1] + log_period - clock)
  end
  reset_after = math.max(reset_after, (paused_until or 0) - clock)
  save(algorithm, clock, limits, states, log_period, clock + reset_after, remembered, granted)
end

-- Whether the counters are a hash or absent, as this script writes them.
local function counters_intact()
  local kind = redis.call('TYPE', counters_key).ok
  return kind == 'none' or kind == 'hash'
end

-- Adds one decision to the key's counters: granted (and the microseconds it waits for its
-- slot) or limited. They expire once untouched for the retention.
local function count(allowed, wait)
  if allowed then
    redis.call('HINCRBY', counters_key, 'granted', 1)
    if wait > 0 then
      redis.call('HINCRBY', counters_key, 'waited_us', int(wait))
    end
  else
    redis.call('HINCRBY', counters_key, 'limited', 1)
  end
  if explicit_now then
    redis.call('PERSIST', counters_key)
  else
    redis.call('PEXPIRE', counters_key, k_counter_retention_ms)
  end
end

-- The counters as stored: granted, limited, waited_us (0 for a missing field).
local function read_counters()
  local flat = redis.call('HMGET', counters_key, 'granted', 'limited', 'waited_us')
  return tonumber(flat[1] or '0') or 0, tonumber(flat[2] or '0') or 0,
         tonumber(flat[3] or '0') or 0
end
