-- Run slots of one key (run -j, run --until-exit), one operation per call, atomic, with
-- the server's clock. Times are microseconds since the epoch.
-- KEYS[1]: hash of the commands: field = ticket, value = "cost hold pid joined started
--          ended host" ('-' for none); field '#next' counts the tickets (arrival order).
-- KEYS[2]: sorted set of the live commands' lease expiries, by ticket.
-- KEYS[3]: sorted set of the waiters, by ticket.
-- KEYS[4]: the hash of the key's state, whose field paused_until (the end of a pause) holds
--          every start until then, as it holds every other grant on the key.
-- ARGV[1]: the operation: join, attempt, finish, leave, renew, entries.
-- ARGV[2]: now, for tests only; empty: the server's TIME. The operation's arguments follow.
local rows, leases, queue = KEYS[1], KEYS[2], KEYS[3]
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * k_micros_per_second + tonumber(time[2])
end
-- The operation's arguments, from 2 on.
local args = {op}
for i = 3, #ARGV do
  args[i - 1] = ARGV[i]
end

local function parse(value)
  local cost, hold, pid, joined, started, ended, host =
    string.match(value, '^(%d+) (%d+) (%d+) (%d+) (%S+) (%S+) (.*)$')
  return {cost = tonumber(cost), hold = tonumber(hold), pid = pid, joined = tonumber(joined),
          started = tonumber(started), ended = tonumber(ended), host = host}
end

local function number(n)
  if n == nil then
    return '-'
  end
  return string.format('%.0f', n)
end

local function format(row)
  return table.concat({number(row.cost), number(row.hold), row.pid, number(row.joined),
                       number(row.started), number(row.ended), row.host}, ' ')
end

-- Keeps the keys at least `ms` longer (the longest lease and hold, and the linger); never
-- shortens what another command asked for.
local function keep(ms)
  for _, key in ipairs({rows, leases, queue}) do
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or (ttl >= 0 and ttl < ms) then
      redis.call('PEXPIRE', key, number(ms))
    end
  end
end

-- Commands whose lease ran out are dead: a waiter leaves, a holder counts as ended now.
local function expire_dead()
  local dead = redis.call('ZRANGEBYSCORE', leases, '-inf', '(' .. number(now))
  for _, ticket in ipairs(dead) do
    local value = redis.call('HGET', rows, ticket)
    if value then
      local row = parse(value)
      if row.started == nil or row.hold == 0 then
        redis.call('HDEL', rows, ticket)
      elseif row.ended == nil then
        row.ended = now
        redis.call('HSET', rows, ticket, format(row))
      end
    end
    redis.call('ZREM', leases, ticket)
    redis.call('ZREM', queue, ticket)
  end
end

-- The first waiter's ticket, or 0.
local function head()
  local first = redis.call('ZRANGE', queue, 0, 0)
  if first[1] then
    return tonumber(first[1])
  end
  return 0
end

-- The earliest lease expiry of another command, or 0.
local function next_expiry(ticket)
  local first = redis.call('ZRANGE', leases, 0, 1, 'WITHSCORES')
  for i = 1, #first, 2 do
    if tonumber(first[i]) ~= ticket then
      return tonumber(first[i + 1])
    end
  end
  return 0
end

-- One cap: 0 now, 1 at a time, 2 once a running holder exits; and the time.
local function admit_under(holders, count, hold, cost)
  local running, held, releases = 0, 0, {}
  for _, row in ipairs(holders) do
    if row.ended == nil then
      running = running + row.cost
    elseif row.ended + hold > now then
      held = held + row.cost
      table.insert(releases, {row.ended + hold, row.cost})
    end
  end
  if running + cost > count then
    return 2, 0
  end
  held = held + running
  if held + cost <= count then
    return 0, now
  end
  table.sort(releases, function(a, b) return a[1] < b[1] end)
  for _, release in ipairs(releases) do
    held = held - release[2]
    if held + cost <= count then
      return 1, release[1]
    end
  end
  return 1, releases[#releases][1]
end

if op == 'renew' then
  redis.call('ZADD', leases, 'XX', number(now + tonumber(args[3])), args[2])
  keep(math.ceil(tonumber(args[3]) / k_micros_per_milli) + k_run_slots_linger_ms)
  return now
end

if op == 'entries' then
  local result = {}
  local all = redis.call('HGETALL', rows)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 1) ~= '#' then
      local row = parse(all[i + 1])
      local lease = redis.call('ZSCORE', leases, all[i])
      if row.ended == nil and lease and tonumber(lease) >= now then
        table.insert(result, {tonumber(all[i]), all[i + 1]})
      end
    end
  end
  table.sort(result, function(a, b) return a[1] < b[1] end)
  local flat = {}
  for _, entry in ipairs(result) do
    table.insert(flat, entry[2])
  end
  return flat
end

expire_dead()

if op == 'finish' or op == 'leave' then
  local ticket = args[2]
  local value = redis.call('HGET', rows, ticket)
  if value then
    local row = parse(value)
    if op == 'leave' or row.started == nil or row.hold == 0 then
      redis.call('HDEL', rows, ticket)
    else
      row.ended = now
      redis.call('HSET', rows, ticket, format(row))
      keep(math.ceil(row.hold / k_micros_per_milli) + k_run_slots_linger_ms)
    end
  end
  redis.call('ZREM', leases, ticket)
  redis.call('ZREM', queue, ticket)
  return {head(), now}
end

-- join and attempt: args[2] ticket (0 to join), args[3] cost, args[4] hold, args[5] lease,
-- args[6] pid, args[7] host, then the caps: count and hold pairs.
local ticket = tonumber(args[2])
local cost, hold, lease = tonumber(args[3]), tonumber(args[4]), tonumber(args[5])
local caps = {}
for i = 8, #args, 2 do
  table.insert(caps, {tonumber(args[i]), tonumber(args[i + 1])})
end
local longest = 0
for _, cap in ipairs(caps) do
  longest = math.max(longest, cap[2])
end
if ticket == 0 or redis.call('HEXISTS', rows, args[2]) == 0 then
  -- New, or forgotten by a reset while it waited: it comes (again), last.
  ticket = redis.call('HINCRBY', rows, '#next', 1)
  if ticket == 1 then
    -- A new count (a new key, or reset): from the clock, past every earlier ticket.
    ticket = now
    redis.call('HSET', rows, '#next', number(now))
  end
  redis.call('HSET', rows, number(ticket),
             format({cost = cost, hold = hold, pid = args[6], joined = now, host = args[7]}))
  redis.call('ZADD', queue, number(ticket), number(ticket))
end
redis.call('ZADD', leases, number(now + lease), number(ticket))
keep(math.ceil(math.max(lease, longest) / k_micros_per_milli) + k_run_slots_linger_ms)

-- The reply of join and attempt: started, behind, kind (0 now, 1 at a time, 2 once a
-- running holder exits), at, binding cap, now, ticket, the head to wake, the next lease
-- expiry of another command, the end of the pause that held the start (0: none).
local first = head()
if first ~= ticket then
  return {0, 1, 0, 0, 0, now, ticket, 0, next_expiry(ticket), 0}
end
local paused_until = 0
if redis.call('TYPE', KEYS[4]).ok == 'hash' then
  paused_until = tonumber(redis.call('HGET', KEYS[4], 'paused_until') or '0') or 0
end
if paused_until > now then
  return {0, 0, 1, paused_until, 0, now, ticket, 0, next_expiry(ticket), paused_until}
end
local holders = {}
local all = redis.call('HGETALL', rows)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 1) ~= '#' and tonumber(all[i]) ~= ticket then
    local row = parse(all[i + 1])
    if row.ended ~= nil and row.ended + math.max(row.hold, longest) <= now then
      redis.call('HDEL', rows, all[i])
    elseif row.started ~= nil then
      table.insert(holders, row)
    end
  end
end
local kind, at, binding = 0, now, 0
for i, cap in ipairs(caps) do
  local k, t = admit_under(holders, cap[1], cap[2], cost)
  if k == 2 then
    if kind ~= 2 then
      kind, at, binding = 2, 0, i - 1
    end
  elseif k == 1 and kind ~= 2 and (kind == 0 or t > at) then
    kind, at, binding = 1, t, i - 1
  end
end
if kind ~= 0 then
  return {0, 0, kind, at, binding, now, ticket, 0, next_expiry(ticket), 0}
end
local row = parse(redis.call('HGET', rows, number(ticket)))
row.started = now
redis.call('HSET', rows, number(ticket), format(row))
redis.call('ZREM', queue, number(ticket))
return {1, 0, 0, now, 0, now, ticket, head(), 0, 0}
