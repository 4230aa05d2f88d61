-- The sliding log of one key, as src/core/grant_log.hpp describes it: entries of (time,
-- cumulative cost), oldest first, one log per key whatever limits its calls named. Two
-- sorted sets index the same entries, as SQLite's two indexes do, so that every question
-- is one O(log n) seek:
--   BASE:t  score = time,            member = the cumulative cost, zero-padded
--   BASE:c  score = cumulative cost, member = the same string
-- Times and cumulative costs both grow along the log, and the padding makes members that
-- share a time sort by cumulative cost too.

-- The logs of earlier versions, one per limit (BASE:t:PERIOD, BASE:c:PERIOD): only `reset`
-- removes them before they expire, and only once the caller has declared them in KEYS.
local function legacy_log_names(base, period)
  return base .. ':t:' .. int(period), base .. ':c:' .. int(period)
end

local function member(cumulative)
  return string.format('%016d', cumulative)
end

-- The log in the sorted sets named `by_time` (BASE:t) and `by_cost` (BASE:c).
local function redis_log(by_time, by_cost)
  local log = {}

  function log.cumulative_through(time)
    local found = redis.call('ZREVRANGEBYSCORE', by_time, int(time), '-inf', 'LIMIT', 0, 1)
    if #found == 0 then
      return nil
    end
    return tonumber(found[1])
  end

  function log.time_reaching(cumulative)
    local found = redis.call('ZRANGEBYSCORE', by_cost, int(cumulative), '+inf', 'LIMIT', 0, 1)
    if #found == 0 then
      return nil
    end
    return tonumber(redis.call('ZSCORE', by_time, found[1]))
  end

  function log.cumulative_before(cumulative)
    local found =
      redis.call('ZREVRANGEBYSCORE', by_cost, '(' .. int(cumulative), '-inf', 'LIMIT', 0, 1)
    if #found == 0 then
      return nil
    end
    return tonumber(found[1])
  end

  function log.last_time()
    local found = redis.call('ZRANGE', by_time, -1, -1, 'WITHSCORES')
    if #found == 0 then
      return nil
    end
    return tonumber(found[2])
  end

  function log.append(time, cumulative)
    redis.call('ZADD', by_time, int(time), member(cumulative))
    redis.call('ZADD', by_cost, int(cumulative), member(cumulative))
  end

  -- Drops the entries below `cumulative`; the entry with it stays. In time order they are
  -- the ones ranked before it (members sharing a time sort by cumulative cost).
  function log.forget_before(cumulative)
    local rank = redis.call('ZRANK', by_time, member(cumulative))
    if rank and rank > 0 then
      redis.call('ZREMRANGEBYRANK', by_time, 0, rank - 1)
    end
    redis.call('ZREMRANGEBYSCORE', by_cost, '-inf', '(' .. int(cumulative))
  end

  function log.remove(cumulative, cost)
    if not redis.call('ZSCORE', by_time, member(cumulative)) then
      return
    end
    redis.call('ZREM', by_time, member(cumulative))
    redis.call('ZREM', by_cost, member(cumulative))
    -- Renumbered in increasing order, the later entries never meet a member still in use.
    local later = redis.call('ZRANGEBYSCORE', by_cost, '(' .. int(cumulative), '+inf')
    for _, old in ipairs(later) do
      local time = redis.call('ZSCORE', by_time, old)
      local renumbered = member(tonumber(old) - cost)
      redis.call('ZREM', by_time, old)
      redis.call('ZREM', by_cost, old)
      redis.call('ZADD', by_time, time, renumbered)
      redis.call('ZADD', by_cost, int(tonumber(old) - cost), renumbered)
    end
  end

  function log.clear()
    redis.call('DEL', by_time, by_cost)
  end

  return log
end
