-- The five algorithms, one table of functions each, mirroring src/core/*.cpp line for line
-- (the conformance test holds them to it). A limit is {count, period, burst, interval}; a
-- state is {s[1], s[2], s[3]}, the core's three slots; every time is in microseconds.
-- earliest returns the grant time and, for the leaky bucket, the time before which a
-- reservation is refused.

local function window_start(t, period)
  return floor_div(t, period) * period
end

local rules = {}

-- Token bucket in TAT form: s[1] is the theoretical arrival time; past now + burst *
-- interval it is the debt of reservations. s[2] is not before the latest grant still
-- standing (only give_back reads it).
rules['token-bucket'] = {
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
}

-- Leaky bucket by virtual scheduling: s[1] is the next free output time.
rules['leaky-bucket'] = {
  earliest = function(limit, s, log, now, cost)
    return math.max(now, s[1]), s[1] - (limit.burst - cost + 1) * limit.interval
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
    return math.max(0, limit.burst - queued), pending
  end,
}

-- Fixed window aligned to the epoch: s[1] is the latest window with grants, s[2] its cost.
rules['fixed-window'] = {
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
    if window ~= s[1] then
      s[1], s[2] = window, 0
    end
    s[2] = s[2] + cost
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
}

-- Sliding window counter: s[1] the current window, s[2] its cost, s[3] the previous one's.
local function roll(s, start, period)
  if start == s[1] then
    return s[1], s[2], s[3]
  end
  if start == s[1] + period then
    return start, 0, s[2]
  end
  return start, 0, 0
end

rules['sliding-window'] = {
  earliest = function(limit, s, log, now, cost)
    local period = limit.period
    local time = math.max(now, s[1])
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
    local start, current, previous = roll(s, window_start(at, limit.period), limit.period)
    s[1], s[2], s[3] = start, current + cost, previous
    return start
  end,
  give_back = function(limit, s, log, at, cost, marker)
    if marker == s[1] then
      s[2] = math.max(0, s[2] - cost)
    elseif marker == s[1] - limit.period then
      s[3] = math.max(0, s[3] - cost)
    end
  end,
  usage = function(limit, s, log, now)
    local period = limit.period
    local window = window_start(now, period)
    if s[1] > window then
      return 0, s[1] + 2 * period - now
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
}

-- Sliding log: s[1] the last grant's time, s[2] the cumulative cost of all grants, s[3]
-- that of the grants forgotten. The entries live in `log` (see redis_log).
rules['sliding-log'] = {
  earliest = function(limit, s, log, now, cost)
    local time = math.max(now, s[1])
    local must_leave = s[2] + cost - limit.count
    if must_leave <= s[3] then
      return time
    end
    local leaving = log.time_reaching(limit.period, must_leave)
    if not leaving then
      -- Only when the log and the state disagree: once the last grant has left the window
      -- nothing can be in it.
      return math.max(time, s[1] + limit.period)
    end
    return math.max(time, leaving + limit.period)
  end,
  take = function(limit, s, log, now, at, cost)
    local horizon = now - limit.period
    local cumulative = log.cumulative_through(limit.period, horizon)
    if cumulative then
      s[3] = math.max(s[3], cumulative)
      log.forget_through(limit.period, horizon, cumulative)
    end
    s[1] = math.max(s[1], at)
    s[2] = s[2] + cost
    log.append(limit.period, s[1], s[2])
    return s[2]
  end,
  give_back = function(limit, s, log, at, cost, marker)
    -- Found by its time, not by its marker: giving back an earlier entry shifts the
    -- cumulative cost of every later one. Grants at one time count in the same windows, so
    -- the last entry at `at` stands for this one when it costs as much; when grants of
    -- other costs share the time, nothing is returned.
    local through = log.cumulative_through(limit.period, at)
    if not through or through <= s[3] then
      return -- forgotten: it left every window long ago
    end
    local before = math.max(s[3], log.cumulative_through(limit.period, at - 1) or 0)
    local previous = math.max(s[3], log.cumulative_before(limit.period, through) or 0)
    if through - before < cost or through - previous ~= cost then
      return
    end
    log.remove(limit.period, through, cost)
    s[2] = s[2] - cost
    s[1] = log.last_time(limit.period) or 0
  end,
  usage = function(limit, s, log, now)
    if s[1] > now then
      return 0, s[1] + limit.period - now
    end
    local before = math.max(s[3], log.cumulative_through(limit.period, now - limit.period) or 0)
    local used = s[2] - before
    local reset_after = 0
    if used > 0 then
      reset_after = s[1] + limit.period - now
    end
    return math.max(0, limit.count - used), reset_after
  end,
}
