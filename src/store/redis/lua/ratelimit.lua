-- One call of this script is one atomic operation on one key: it loads the key, calls the
-- function of key_life.lua that mirrors src/core/key_life.cpp, writes what that says and
-- replies.
--   KEYS[1]   the key's hash (BASE): algorithm, clock, limits (for a window key first the
--             cost it has granted, then "count period burst s1 s2 s3" per limit of the
--             last call, in order, then per limit the key remembers with its count
--             negated), log_period (sliding log: the longest period a call named),
--             paused_until, and the server's word: grant_seq, budget "ceiling reset ...",
--             awaited "seq cost at until ..." (see server_budget.lua), policies (as observe
--             was given them, store::redis::encode_policies), answered "at latency",
--             adaptive "max_rate cut_at successes measured_from clock next_slot"
--             (adaptive_rate.lua)
--   KEYS[2,3] its sliding log, BASE:t and BASE:c (see grant_log.lua)
--   KEYS[4]   its counters, BASE:n (granted, limited, waited_us, throttled)
--   KEYS[5..] reset only: the logs of version 1 it asked for (see reset)
--             Every operation takes the four names, whatever the algorithm, and touches no
--             other: Redis Cluster and proxies route a script by the names it declares.
--   ARGV[1]   decide | give_back | inspect | reset | pause | pause_of | observe | count
--   ARGV[2]   now in microseconds, for the conformance test only; empty: the server's TIME.
--             With an explicit now nothing expires, so that a test's clock need not be real.
--   decide    ARGV[3..] algorithm cost reserve(0|1) max_wait(-1: none) chosen(0|1)
--             answer_wait(0: awaits none) n, n x (count period burst), adaptive(0|1)
--             -> {'ok', algorithm,
--             allowed, now, wait, binding, remaining, reset_after, at, n, n x (remaining,
--             reset_after, retry_after, marker), refusal, paused_until (0: no pause runs),
--             seq, budget_until (0: none), budget_remaining (-1: no budget), budget_reset,
--             adaptive_rate (0: not adaptive), spaced_until (0: not spaced), paced (the
--             spacing the grant took, 0: none)}
--             or {'conflict', stored algorithm}. A key made by another algorithm keeps its own unless the
--             algorithm was chosen (then 'conflict'). A decision adds itself to the counters.
--   decide, give_back and inspect reply {'damaged'} for a key whose values this script did
--   not write (another type, unreadable fields, values out of bounds), and {'clock'} when
--   the clock is past the latest time the store counts
--   give_back ARGV[3..] algorithm at cost seq n, n x (count period burst), n x marker,
--             paced (the spacing the grant took, 0: none) -> {'ok'}
--   inspect   ARGV[3] cost (empty: 1) -> {'none'} or {'ok', algorithm, clock, now, allowed,
--             wait, binding, remaining, reset_after, paused_until (0: no pause runs), n,
--             n x (count period burst s1 s2 s3 remaining reset_after retry_after),
--             log_period, paused_until as stored, granted, limited, waited_us, m,
--             m x (count period burst s1 s2 s3), grant_seq, budget, awaited, policies,
--             answered_at, answer_latency, throttled, budget_until, budget_remaining (-1: none), budget_reset,
--             adaptive (as stored, '' for none)}:
--             core::inspect for a try of that cost, the state, the counters, the limits the
--             key remembers and its server word; a key that holds only what a server said
--             has the algorithm '' and no limits
--   reset     -> 1 if the key existed (its state or its counters), else 0; or, deleting
--             nothing, {'declare', period...}: call again with the logs of version 1 of
--             these periods (BASE:t:PERIOD, BASE:c:PERIOD) in KEYS[5..]
--   pause     ARGV[3] duration -> {'ok', now, paused_until}; the key holds at least that
--             pause (core::pause), created with it alone when missing: whatever of KEYS
--             expires before the pause ends is kept until then.
--   pause_of  ARGV[3] seq ARGV[4] at (both empty: no grant) -> {'ok', now, paused_until (0:
--             none runs), overdrawn_until (0: the budget is not overdrawn,
--             core::overdrawn_until), probe_until (0: the grant waits for no probe,
--             core::probe_held_until)}, reading only KEYS[1]
--   observe   ARGV[3..] pause throttled(0|1) grant(-1: unknown) policies n, n x (remaining
--             reset_after), answered(0|1) -> {'ok', now, paused_until (0: none runs), budget_remaining (-1:
--             none), budget_reset}: core::observe_key; the key, made holding only what the
--             answer left when missing, is kept until that ends; a throttled answer adds to
--             the counters
--   count     ARGV[3] granted(0|1) ARGV[4] wait -> {'ok'}: a request decided outside decide
--             (a command started on the run slots, or refused one) adds itself to the
--             counters, as a decision does
-- A key's pause is the field paused_until of its hash, which only `pause` and `observe`
-- write (and a decision that writes again a key it forgot as fresh, with the pause it kept).
-- Every stored value expires when its state is a fresh key's again, so nothing needs gc.

-- Writes what a call left to write (core::KeyWrite). A key forgotten and written again is
-- written as a new one: nothing of its hash stays but what the state holds.
local function write(outcome)
  if outcome.write == 'erase' then
    redis.call('DEL', base, log_by_time, log_by_cost)
  elseif outcome.write == 'state' then
    if outcome.forgot then
      redis.call('DEL', base)
      if outcome.state.paused_until ~= 0 then
        redis.call('HSET', base, 'paused_until', int(outcome.state.paused_until))
      end
    end
    save(outcome.state, outcome.fresh_at)
  end
end

-- After a pause or an answer written on the key (`existed`: it was stored before): nothing
-- of it may expire before it is fresh again at `fresh_at`, what it holds over (a new key's
-- hash has no expiry yet); what expires later keeps its expiry.
local function hold_until(fresh_at, existed)
  if explicit_now then
    return
  end
  local ttl = expiry_ms(fresh_at - server_time())
  for i, key in ipairs(KEYS) do
    local left = redis.call('PTTL', key)
    if (left >= 0 and left < ttl) or (i == 1 and not existed) then
      redis.call('PEXPIRE', key, ttl)
    end
  end
end

local operations = {}

function operations.decide()
  local max_wait = tonumber(ARGV[6])
  local request = {now = now, cost = tonumber(ARGV[4]), reserve = ARGV[5] == '1',
                   max_wait = max_wait < 0 and math.huge or max_wait}
  request.answer_wait = tonumber(ARGV[8])
  local limits, next_arg = read_limits(9)
  request.adaptive = ARGV[next_arg] == '1'
  local call = {algorithm = ARGV[3], chosen = ARGV[7] == '1', limits = limits,
                request = request}
  local stored, problem = load()
  if problem or not logs_intact() or not counters_intact() then
    return damaged()
  end
  local outcome = decide_key(stored, call, redis_log(log_by_time, log_by_cost))
  if outcome.conflict then
    return {'conflict', outcome.conflict}
  end
  write(outcome)
  local decision = outcome.decision
  count(decision.allowed, decision.wait)
  local reply = {'ok', decision.algorithm, decision.allowed and 1 or 0, decision.now,
                 decision.wait, decision.binding - 1, decision.remaining, decision.reset_after,
                 decision.grant.at, #call.limits}
  for i, limit in ipairs(decision.limits) do
    for _, value in ipairs({limit.remaining, limit.reset_after, limit.retry_after,
                            decision.grant.markers[i] or 0}) do
      reply[#reply + 1] = value
    end
  end
  reply[#reply + 1] = decision.refusal
  reply[#reply + 1] = decision.paused_until
  for _, value in ipairs({decision.grant.seq or 0, decision.budget_until,
                          decision.budget_remaining or -1, decision.budget_reset or 0,
                          decision.adaptive_rate, decision.spaced_until,
                          decision.grant.paced}) do
    reply[#reply + 1] = value
  end
  return reply
end

function operations.give_back()
  local algorithm = ARGV[3]
  local grant = {at = tonumber(ARGV[4]), cost = tonumber(ARGV[5]), seq = tonumber(ARGV[6]),
                 markers = {}}
  local limits, next_arg = read_limits(7)
  for i = 1, #limits do
    grant.markers[i] = tonumber(ARGV[next_arg + i - 1])
  end
  grant.paced = tonumber(ARGV[next_arg + #limits] or '0') or 0
  local stored, problem = load()
  if problem or not logs_intact() then
    return damaged()
  end
  write(give_back_to_key(stored, algorithm, limits, grant, now,
                         redis_log(log_by_time, log_by_cost)))
  return {'ok'}
end

function operations.inspect()
  local state, problem = load()
  if problem or (state and not logs_intact()) or not counters_intact() then
    return damaged()
  end
  if not state then
    return {'none'}
  end
  local cost = tonumber(ARGV[3] or '') or 1
  local standing = inspect(state, redis_log(log_by_time, log_by_cost), now, cost)
  local reply = {'ok', state.algorithm or '', state.clock, standing.now,
                 standing.allowed and 1 or 0, standing.wait, standing.binding - 1,
                 standing.remaining, standing.reset_after, standing.paused_until,
                 #state.limits}
  for i, s in ipairs(state.limits) do
    local limit, slots, report = s.limit, s.slots, standing.limits[i]
    for _, value in ipairs({limit.count, limit.period, limit.burst, slots[1], slots[2], slots[3],
                            report.remaining, report.reset_after, report.retry_after}) do
      reply[#reply + 1] = value
    end
  end
  reply[#reply + 1] = state.log_period
  reply[#reply + 1] = state.paused_until
  local granted, limited, waited_us, throttled = read_counters()
  for _, value in ipairs({granted, limited, waited_us}) do
    reply[#reply + 1] = value
  end
  reply[#reply + 1] = #state.remembered
  for _, s in ipairs(state.remembered) do
    local limit, slots = s.limit, s.slots
    for _, value in ipairs({limit.count, limit.period, limit.burst, slots[1], slots[2],
                            slots[3]}) do
      reply[#reply + 1] = value
    end
  end
  local word = state.server
  for _, value in ipairs({word.grant_seq, encode_list(word.budget), encode_list(word.awaited),
                          word.policies, word.answered_at, word.answer_latency, throttled,
                          standing.budget_until,
                          standing.budget_remaining or -1, standing.budget_reset or 0,
                          word.adaptive and encode_adaptive(word.adaptive) or ''}) do
    reply[#reply + 1] = value
  end
  return reply
end

function operations.pause()
  local duration = tonumber(ARGV[3])
  local stored, problem = load()
  if problem or (stored and not logs_intact()) then
    return damaged()
  end
  local outcome = pause_key(stored, now, duration, redis_log(log_by_time, log_by_cost))
  local clock, paused_until = outcome.decision.now, outcome.decision.paused_until
  if outcome.write == 'nothing' then
    return {'ok', clock, paused_until} -- nothing to hold: no key is made for it
  end
  redis.call('HSET', base, 'clock', int(clock), 'paused_until', int(paused_until))
  hold_until(outcome.fresh_at, stored ~= nil)
  return {'ok', clock, paused_until}
end

function operations.pause_of()
  local flat = redis.call('HMGET', base, 'clock', 'paused_until', 'grant_seq', 'budget',
                          'awaited', 'answered')
  local clock = math.max(now, tonumber(flat[1] or '0') or 0)
  local paused_until = tonumber(flat[2] or '0') or 0
  -- A server word that cannot be read holds nobody here; the decision after says so.
  local word = decode_word(flat[3], flat[4], flat[5], flat[6])
  local probe_until = 0
  if word and (ARGV[3] or '') ~= '' then
    probe_until = probe_held_until(word, clock, tonumber(ARGV[3]), tonumber(ARGV[4]))
  end
  return {'ok', clock, paused_until > clock and paused_until or 0,
          word and overdrawn_until(word, clock) or 0, probe_until}
end

-- core::observe_key: what a server answered, applied to the key as pause applies a pause;
-- a key made for it holds only what the answer left, and nothing of the key expires before
-- that ends. A throttled answer adds to the counters.
function operations.observe()
  local observation = {pause = tonumber(ARGV[3]), grant = tonumber(ARGV[5]),
                       policies = ARGV[6], standings = {}, throttled = ARGV[4] == '1'}
  if observation.grant < 0 then
    observation.grant = nil
  end
  local n = tonumber(ARGV[7])
  for i = 1, n do
    observation.standings[i] = {tonumber(ARGV[6 + 2 * i]), tonumber(ARGV[7 + 2 * i])}
  end
  observation.answered = ARGV[8 + 2 * n] == '1'
  local stored, problem = load()
  if problem or (stored and not logs_intact()) or not counters_intact() then
    return damaged()
  end
  local outcome = observe_key(stored, now, observation, redis_log(log_by_time, log_by_cost))
  local standing = outcome.decision
  if ARGV[4] == '1' then
    count_throttle()
  end
  local reply = {'ok', standing.now,
                 standing.paused_until > standing.now and standing.paused_until or 0,
                 standing.budget_remaining or -1, standing.budget_reset or 0}
  if outcome.write == 'nothing' then
    return reply -- nothing to hold: no key is made for it
  end
  local state = outcome.state
  redis.call('HSET', base, 'clock', int(state.clock), 'paused_until', int(state.paused_until))
  save_word(state.server)
  hold_until(outcome.fresh_at, stored ~= nil)
  return reply
end

function operations.count()
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
function operations.reset()
  local state = load()
  if state and state.algorithm and algorithms[state.algorithm].keeps_log then
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

if operations[op] then
  return operations[op]()
end
return redis.error_reply('unknown operation ' .. tostring(op))
