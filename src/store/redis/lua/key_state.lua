-- The key's stored state for ratelimit.lua, which follows this part: the call's clock, the
-- state loaded and checked against the bounds, the limits of a call, and saving with the
-- expiry of a fresh key's state.

-- Every name an operation touches is declared in KEYS, as Redis Cluster and proxies require:
-- the key's hash, its sliding log (the same names whatever the algorithm, so that a call
-- of one algorithm can read or drop what another left), and its counters (store::KeyCounters:
-- granted, limited, waited_us), a hash apart from the state so that they outlive it.
local base, log_by_time, log_by_cost, counters_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op = ARGV[1]
local explicit_now = ARGV[2] ~= ''

local function server_time()
  local time = redis.call('TIME')
  return tonumber(time[1]) * k_micros_per_second + tonumber(time[2])
end

local now
if explicit_now then
  now = tonumber(ARGV[2])
else
  now = server_time()
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
                          'paused_until', 'grant_seq', 'budget', 'awaited', 'policies',
                          'answered', 'adaptive')
  if not flat[1] and not flat[2] and not flat[3] then
    return nil
  end
  local paused_until = tonumber(flat[5] or '0')
  if not paused_until or not is_time(paused_until) then
    return nil, 'damaged'
  end
  local word = decode_word(flat[6], flat[7], flat[8], flat[10], flat[11])
  if not word then
    return nil, 'damaged'
  end
  -- Stored as observe was given them (store::redis::encode_policies); read by the caller.
  word.policies = flat[9] or ''
  -- Whether the hash has fields of lists that save_word may have to delete.
  word.stored_lists = (flat[7] or flat[8]) and true or false
  if not flat[1] and not flat[3] then
    -- Only what a server said (`ratelimit pause` or `observe` on a key never used): no
    -- algorithm, no limits yet.
    local clock = tonumber(flat[2])
    if not is_time(clock) or flat[4] then
      return nil, 'damaged'
    end
    return {algorithm = nil, clock = clock, limits = {}, remembered = {}, log_period = 0,
            granted = 0, paused_until = paused_until, server = word}
  end
  local state = {algorithm = flat[1], clock = tonumber(flat[2]), limits = {}, remembered = {},
                 log_period = tonumber(flat[4] or '0'), granted = 0,
                 paused_until = paused_until, server = word}
  local values = {}
  for word in string.gmatch(flat[3] or '', '%S+') do
    values[#values + 1] = tonumber(word)
  end
  if not algorithms[state.algorithm or ''] or not state.clock or not state.log_period or
      #values < 6 or #values % 6 > 1 then
    return nil, 'damaged'
  end
  -- A window key's limits follow what it has granted (core::KeyState::granted); a key
  -- written before it was kept is read as core::read_earlier_version reads it, once its
  -- limits are.
  local first = 1
  if #values % 6 == 1 then
    state.granted, first = values[1], 2
    if not is_exact(state.granted) then
      return nil, 'damaged'
    end
  end
  -- The limits the key remembers (core::KeyState::remembered) follow, their count negated.
  for i = first, #values, 6 do
    local remembered = values[i] < 0
    local count, period, burst = remembered and -values[i] or values[i], values[i + 1],
                                 values[i + 2]
    if not (is_exact(count) and is_exact(period) and is_exact(burst)) or count < 1 or
        period < 1 or (not remembered and #state.remembered > 0) then
      return nil, 'damaged'
    end
    local list = remembered and state.remembered or state.limits
    list[#list + 1] = {limit = make_limit(count, period, burst),
                       slots = {values[i + 3], values[i + 4], values[i + 5]}}
  end
  if #state.limits == 0 then
    return nil, 'damaged'
  end
  if first == 1 then
    read_earlier_version(state)
  end
  if not within_bounds(state) then
    return nil, 'damaged'
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

-- Every key that holds state for `algorithm`.
local function keys_of(algorithm)
  if algorithms[algorithm].keeps_log then
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

-- A duration in microseconds as a key's expiry in milliseconds: a millisecond more than
-- the rounding up, since expiring early could grant too soon.
local function expiry_ms(duration)
  return ceil_div(duration, k_micros_per_milli) + 1
end

-- Writes the key's server word (its grant sequence, budget, awaited answers, policies and
-- adaptive rate) into its hash; an empty list is no field.
local function save_word(word)
  local set, gone = {'grant_seq', int(word.grant_seq)}, {}
  for _, field in ipairs({'budget', 'awaited'}) do
    if #word[field] > 0 then
      set[#set + 1], set[#set + 2] = field, encode_list(word[field])
    else
      gone[#gone + 1] = field
    end
  end
  if word.policies ~= '' then
    set[#set + 1], set[#set + 2] = 'policies', word.policies
  end
  if word.answered_at ~= 0 or word.answer_latency ~= 0 then
    set[#set + 1], set[#set + 2] = 'answered',
                                   int(word.answered_at) .. ' ' .. int(word.answer_latency)
  end
  if word.adaptive then
    set[#set + 1], set[#set + 2] = 'adaptive', encode_adaptive(word.adaptive)
  end
  redis.call('HSET', base, unpack(set))
  if #gone > 0 and word.stored_lists then
    redis.call('HDEL', base, unpack(gone))
  end
end

-- Writes the key's state: what a window key has granted, the limits of its last call and
-- their slots, then those it remembers, and its server word. Its values expire at
-- `fresh_at`, when the state is a fresh key's again.
local function save(state, fresh_at)
  local fields = {}
  if algorithms[state.algorithm].counts_granted then
    fields[1] = int(state.granted)
  end
  for _, list in ipairs({state.limits, state.remembered}) do
    local sign = list == state.limits and 1 or -1
    for _, s in ipairs(list) do
      local limit, slots = s.limit, s.slots
      fields[#fields + 1] = table.concat({int(sign * limit.count), int(limit.period),
                                          int(limit.burst), int(slots[1]), int(slots[2]),
                                          int(slots[3])}, ' ')
    end
  end
  redis.call('HSET', base, 'algorithm', state.algorithm, 'clock', int(state.clock), 'limits',
             table.concat(fields, ' '), 'log_period', int(state.log_period))
  save_word(state.server)
  local keys = keys_of(state.algorithm)
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
      redis.call('PEXPIRE', key, expiry_ms(ttl))
    end
  end
end

-- Whether the counters are a hash or absent, as this script writes them.
local function counters_intact()
  local kind = redis.call('TYPE', counters_key).ok
  return kind == 'none' or kind == 'hash'
end

-- Keeps the counters for the retention from now.
local function keep_counters()
  if explicit_now then
    redis.call('PERSIST', counters_key)
  else
    redis.call('PEXPIRE', counters_key, k_counter_retention_ms)
  end
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
  keep_counters()
end

-- Adds an answer 429 or 503 observed to the key's counters.
local function count_throttle()
  redis.call('HINCRBY', counters_key, 'throttled', 1)
  keep_counters()
end

-- The counters as stored: granted, limited, waited_us, throttled (0 for a missing field).
local function read_counters()
  local flat = redis.call('HMGET', counters_key, 'granted', 'limited', 'waited_us', 'throttled')
  return tonumber(flat[1] or '0') or 0, tonumber(flat[2] or '0') or 0,
         tonumber(flat[3] or '0') or 0, tonumber(flat[4] or '0') or 0
end
