-- The rules of each algorithm, one table of functions each, mirroring src/core/*.cpp line
-- for line (the conformance and differential tests hold them to it), by the name of its C++
-- enumerator. A limit is {count, period, burst, interval}; a state is {s[1], s[2], s[3]},
-- the core's three slots; every time is in microseconds. earliest returns the grant time
-- and, for the leaky bucket, the time before which a reservation is refused.
-- carry(limit, stored, now, granted) derives the slots of a limit that the key does not
-- hold from the stored limits ({limit, slots} each); keeps_remembered(st, log, now) says
-- whether the key still needs a limit it remembers (by default while the limit holds
-- something); protect(st, s, log, at, cost) is the sliding log's slot for a grant that must
-- not overfill the windows of a remembered limit's grants; read_earlier_version(st) reads a
-- window's slots as stored before keys counted what they granted. What else the core knows
-- of each algorithm (its Rules' shares_state, remembers_unnamed and counts_granted among
-- it) comes with its entry of the prelude's table.

-- core::Limit: count per period, with a burst; `interval` is its emission interval.
local function make_limit(count, period, burst)
  return {count = count, period = period, burst = burst, interval = ceil_div(period, count)}
end

local function window_start(t, period)
  return floor_div(t, period) * period
end

local rules = {}

-- Token bucket in TAT form: s[1] is the theoretical arrival time; past now + burst *
-- interval it is the debt of reservations. s[2] is not before the latest grant still
-- standing (only give_back reads it).
rules.token_bucket = {
  earliest = function(limit, s, log, now, cost)
    return math.max(now, s[1] + (cost - limit.burst) * limit.interval)
  end,
  take = function(limit, s, log, now, at, cost)
    s[1] = math.max(s[1], at) + cost * limit.interval
    s[2] = math.max(s[2], at)
    return s[1]
  end,
  give_back = function(limit, s, log, at, cost, marker)
    -- Grants after this one keep the part of its cost within their distance from it.
    local returned = cost * limit.interval - math.max(0, s[2] - at)
    if returned > 0 then
      s[1] = s[1] - returned
      s[2] = math.min(s[2], s[1] - limit.interval)
    end
  end,
  usage = function(limit, s, log, now)
    local owed = math.max(0, s[1] - now)
    local tokens = limit.burst - ceil_div(owed, limit.interval)
    return math.min(math.max(tokens, 0), limit.burst), owed
  end,
  carry = function(limit, stored, now)
    -- A stored limit at most as fast bounds the new one (the least bound holds); a faster
    -- one keeps all its units in use, at the new rate (the most of them).
    local to = limit.interval
    local bound, kept, latest_grant = nil, 0, 0
    for _, st in ipairs(stored) do
      local from = st.limit.interval
      local owed_until = st.slots[1]
      local latest_at = st.slots[2]
      latest_grant = math.max(latest_grant, latest_at)
      if from >= to then
        local converted = owed_until
        if owed_until > now then
          converted = now + rescale(owed_until - now, from, to)
        end
        if latest_at > now and latest_at < owed_until then
          converted = math.max(converted, latest_at + rescale(owed_until - latest_at, from, to))
        end
        bound = bound and math.min(bound, converted) or converted
      else
        local owed = math.max(0, owed_until - now)
        kept = math.max(kept, owed_until, now + rescale(owed, from, to))
      end
    end
    return {bound or kept, latest_grant, 0}
  end,
}

-- Leaky bucket by virtual scheduling: s[1] is the next free output time. A cost of C
-- leaves C - 1 intervals more, so that no PERIOD holds more than N; the queue refuses a
-- request with `burst` units waiting ahead, whatever its own cost.
rules.leaky_bucket = {
  earliest = function(limit, s, log, now, cost)
    return math.max(now, s[1] + (cost - 1) * limit.interval), s[1] - limit.burst * limit.interval
  end,
  take = function(limit, s, log, now, at, cost)
    s[1] = math.max(s[1], at) + cost * limit.interval
    return s[1]
  end,
  give_back = function(limit, s, log, at, cost, marker)
    if s[1] == marker then
      s[1] = s[1] - cost * limit.interval
    end
  end,
  usage = function(limit, s, log, now)
    -- The room in the queue: the grant leaving at now or before is not waiting in it.
    local pending = math.max(0, s[1] - now)
    local queued = math.max(0, ceil_div(pending, limit.interval) - 1)
    -- Fresh once a request of the largest cost, N, would leave now, as for a new key.
    return math.max(0, limit.burst - queued),
           math.max(0, s[1] + (limit.count - 1) * limit.interval - now)
  end,
  carry = function(limit, stored, now)
    local to = limit.interval
    local bound, kept = nil, 0
    for _, st in ipairs(stored) do
      local from = st.limit.interval
      local free_at = st.slots[1]
      if free_at + (st.limit.count - 1) * from <= now then
        -- Fresh: it holds nothing, as the key expired would hold nothing.
      elseif from >= to then
        local converted = free_at
        if free_at > now then
          converted = now + rescale(free_at - now, from, to)
        end
        converted = math.max(converted, free_at - from + to)
        bound = bound and math.min(bound, converted) or converted
      else
        -- All its units queued, at the new rate; the last grant spaced at the new rate.
        local pending = math.max(0, free_at - now)
        kept = math.max(kept, free_at - from + to, now + rescale(pending, from, to))
      end
    end
    return {bound or kept, 0, 0}
  end,
}

-- Fixed window aligned to the epoch: s[1] is the latest window with grants, s[2] its cost,
-- s[3] the time of the latest grant.

-- The latest grant that any of the stored window states counted (in their slot `i`; 0 when
-- fresh), or nil when none did.
local function latest_grant(stored, i)
  local latest = nil
  for _, st in ipairs(stored) do
    if st.slots[i] ~= 0 then
      latest = math.max(latest or st.slots[i], st.slots[i])
    end
  end
  return latest
end

-- As long as the key's state, a remembered window, even empty, counts every grant.
local function always()
  return true
end

rules.fixed_window = {
  earliest = function(limit, s, log, now, cost)
    if s[1] < window_start(now, limit.period) then
      return now
    end
    if s[2] + cost <= limit.count then
      return math.max(now, s[1])
    end
    return s[1] + limit.period
  end,
  take = function(limit, s, log, now, at, cost)
    local window = window_start(at, limit.period)
    if window < s[1] then
      -- A remembered limit counting a grant before its latest window: no longer stored.
      return window
    end
    if window ~= s[1] then
      s[1], s[2] = window, 0
    end
    s[2] = add_window_count(s[2], cost)
    s[3] = math.max(s[3], at)
    return window
  end,
  give_back = function(limit, s, log, at, cost, marker)
    if s[1] == marker then
      s[2] = math.max(0, s[2] - cost)
    end
  end,
  usage = function(limit, s, log, now)
    local current = window_start(now, limit.period)
    if s[1] > current then
      -- A later window holds reservations: nothing is known to be left until it ends.
      return 0, s[1] + limit.period - now
    end
    if s[1] < current or s[2] == 0 then
      return limit.count, 0
    end
    return math.max(0, limit.count - s[2]), s[1] + limit.period - now
  end,
  carry = function(limit, stored, now, granted)
    -- The new window holds the latest grant any stored state knows of; it holds at most the
    -- count of a stored window covering it up to that grant, and at most what the key
    -- granted since its state was made.
    local latest = latest_grant(stored, 3)
    if not latest then
      return {0, 0, 0}
    end
    local window = window_start(latest, limit.period)
    local used = granted
    for _, st in ipairs(stored) do
      if st.slots[1] <= window and latest < st.slots[1] + st.limit.period then
        used = math.min(used, st.slots[2])
      end
    end
    return {window, used, latest}
  end,
  keeps_remembered = always,
  -- Written before the latest grant was kept: its grants may lie anywhere in the window.
  read_earlier_version = function(st)
    if st.slots[3] == 0 and st.slots[1] ~= 0 then
      st.slots[3] = st.slots[1] + st.limit.period - 1
    end
  end,
}

-- Sliding window counter: s[1] the time of the latest grant (not before it), whose window
-- is the current one, s[2] the current window's cost, s[3] the previous one's.
local function current_window(s, period)
  return window_start(s[1], period)
end

-- The stored counts, saturated (an earlier version could store more).
local function stored_counts(s, period)
  return current_window(s, period), math.min(s[2], k_max_window_count),
         math.min(s[3], k_max_window_count)
end

local function roll(s, start, period)
  local stored, current, previous = stored_counts(s, period)
  if start == stored then
    return stored, current, previous
  end
  if start == stored + period then
    return start, 0, current
  end
  return start, 0, 0
end

rules.sliding_window = {
  earliest = function(limit, s, log, now, cost)
    local period = limit.period
    local time = math.max(now, current_window(s, period))
    while true do
      local start, current, previous = roll(s, window_start(time, period), period)
      local room = limit.count - cost - current
      if room >= 0 then
        -- With room >= previous the weight is already low enough: the first moment is now.
        if previous == 0 or room >= previous then
          return time
        end
        local covered = mul_div(room, period, previous)
        return math.max(time, start + period - covered)
      end
      time = start + period
    end
  end,
  take = function(limit, s, log, now, at, cost)
    local period = limit.period
    local window = window_start(at, period)
    local stored = current_window(s, period)
    if window < stored then
      -- A remembered limit counting a grant before its latest one: the previous window's
      -- count takes it; an older window's is no longer stored.
      if window == stored - period then
        s[3] = add_window_count(s[3], cost)
      end
      return window
    end
    local _, current, previous = roll(s, window, period)
    s[1], s[2], s[3] = math.max(s[1], at), add_window_count(current, cost), previous
    return window
  end,
  give_back = function(limit, s, log, at, cost, marker)
    local stored = current_window(s, limit.period)
    if marker == stored then
      s[2] = math.max(0, s[2] - cost)
    elseif marker == stored - limit.period then
      s[3] = math.max(0, s[3] - cost)
    end
  end,
  usage = function(limit, s, log, now)
    local period = limit.period
    local window = window_start(now, period)
    local stored = current_window(s, period)
    if stored > window then
      return 0, stored + 2 * period - now
    end
    local start, current, previous = roll(s, window, period)
    local q, r = mul_div(previous, period - (now - start), period)
    if r > 0 then
      q = q + 1
    end
    local reset_after = 0
    if current > 0 then
      reset_after = start + 2 * period - now
    elseif previous > 0 then
      reset_after = start + period - now
    end
    return math.max(0, limit.count - (current + q)), reset_after
  end,
  carry = function(limit, stored, now, granted)
    -- The new current window holds the latest grant any stored state knows of; each of the
    -- new two windows holds at most the count of a stored window, or pair of windows,
    -- covering it, and at most what the key granted since its state was made.
    local latest = latest_grant(stored, 1)
    if not latest then
      return {0, 0, 0}
    end
    local function at_most(from, to)
      local most = granted
      for _, st in ipairs(stored) do
        local length = st.limit.period
        local start, current, previous = stored_counts(st.slots, length)
        if start <= from and to <= start + length then
          most = math.min(most, current)
        end
        if start - length <= from and to <= start then
          most = math.min(most, previous)
        end
        if start - length <= from and to <= start + length then
          most = math.min(most, current + previous)
        end
      end
      return most
    end
    local window = window_start(latest, limit.period)
    return {latest, at_most(window, latest + 1), at_most(window - limit.period, window)}
  end,
  keeps_remembered = always,
  -- s[1] was the current window's start: its grants may lie anywhere in it.
  read_earlier_version = function(st)
    if st.slots[1] ~= 0 and st.slots[2] > 0 then
      st.slots[1] = st.slots[1] + st.limit.period - 1
    end
  end,
}

-- Sliding log: s[1] the last grant's time, s[2] the cumulative cost of all grants, s[3]
-- that of the grants forgotten. The entries live in `log` (see redis_log), one per key;
-- take and give_back get a limit whose period is the log's retention.
rules.sliding_log = {
  earliest = function(limit, s, log, now, cost)
    local time = math.max(now, s[1])
    -- Forgotten grants are at or before the oldest entry kept, which stands for them.
    local must_leave = s[2] + cost - limit.count
    if must_leave <= 0 then
      return time
    end
    local leaving = log.time_reaching(must_leave)
    if not leaving then
      -- Only when the log and the state disagree: once the last grant has left the window
      -- nothing can be in it.
      return math.max(time, s[1] + limit.period)
    end
    return math.max(time, leaving + limit.period)
  end,
  take = function(limit, s, log, now, at, cost)
    local horizon = now - limit.period
    local cumulative = log.cumulative_through(horizon)
    if cumulative then
      s[3] = math.max(s[3], cumulative)
      log.forget_before(cumulative)
    end
    s[1] = math.max(s[1], at)
    s[2] = s[2] + cost
    log.append(s[1], s[2])
    return s[2]
  end,
  give_back = function(limit, s, log, at, cost, marker)
    -- Found by its time, not by its marker: giving back an earlier entry shifts the
    -- cumulative cost of every later one. Grants at one time count in the same windows, so
    -- the last entry at `at` stands for this one when it costs as much; when grants of
    -- other costs share the time, nothing is returned.
    local through = log.cumulative_through(at)
    if not through or through <= s[3] then
      return -- forgotten: it left every window long ago
    end
    local before = math.max(s[3], log.cumulative_through(at - 1) or 0)
    local previous = math.max(s[3], log.cumulative_before(through) or 0)
    if through - before < cost or through - previous ~= cost then
      return
    end
    log.remove(through, cost)
    s[2] = s[2] - cost
    s[1] = log.last_time() or 0
  end,
  usage = function(limit, s, log, now)
    if s[1] > now then
      return 0, s[1] + limit.period - now
    end
    -- A window that reaches before the oldest entry kept may hold every grant forgotten.
    local before = log.cumulative_through(now - limit.period) or 0
    local used = s[2] - before
    local reset_after = 0
    if used > 0 then
      reset_after = s[1] + limit.period - now
    end
    return math.max(0, limit.count - used), reset_after
  end,
  carry = function(limit, stored, now)
    if #stored == 0 then
      return {0, 0, 0}
    end
    local s = stored[1].slots
    return {s[1], s[2], s[3]}
  end,
  -- A limit of an earlier call, as the key's slots were after it: s[1] is not before its
  -- latest grant, the only time a later grant could still overfill one of its windows.
  keeps_remembered = function(st, log, now)
    return st.slots[1] >= now
  end,
  protect = function(st, s, log, at, cost)
    local latest = st.slots[1]
    if latest < at then
      return at
    end
    if latest == at then
      local remaining = rules.sliding_log.usage(st.limit, s, log, at)
      if remaining >= cost then
        return at
      end
    end
    return latest + 1
  end,
}

-- Each algorithm of the C++ table (k_algorithm_table, in the prelude) with its rules, by the
-- name users type: what the stored `algorithm` field and the operations' arguments hold.
local algorithms = {}
for _, entry in ipairs(k_algorithm_table) do
  entry.rules = rules[entry.rules_key]
  if not entry.rules then
    error('no rules for the algorithm ' .. entry.name .. ' (src/store/lua/rules.lua)')
  end
  algorithms[entry.name] = entry
end

-- The algorithm of a key's `state`; a key that holds only a pause has none, and nothing of
-- its algorithm is asked but what its no limits hold: the first of the table stands for it.
local function algorithm_of(state)
  return algorithms[state.algorithm] or algorithms[k_algorithm_table[1].name]
end
