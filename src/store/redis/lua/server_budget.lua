-- The server's word on a key besides a pause, mirroring src/core/server_budget.cpp: its
-- grant sequence, its server budget (ceilings on that sequence until their resets), and the
-- grants awaiting their answers. Times in microseconds. A word is a table {grant_seq,
-- budget = {{ceiling, reset}...} by reset, awaited = {{seq, cost, at, until}...} oldest
-- first, policies = the text observe stored (store::redis::encode_policies), '' for none,
-- adaptive = the adaptive rate (adaptive_rate.lua), nil for none}.

-- A word that holds nothing.
local function no_word()
  return {grant_seq = 0, budget = {}, awaited = {}, policies = '', answered_at = 0,
          answer_latency = 0}
end

local function clamp_ceiling(value)
  return math.max(-k_max_ceiling, math.min(k_max_ceiling, value))
end

local function answer_ended(awaited, at_now)
  return awaited[4] <= at_now
end

-- The cost of the grants awaiting their answers whose slots are before `reset`, granted up
-- to the sequence `up_to` when given.
local function awaited_before(word, reset, up_to)
  local cost = 0
  for _, awaited in ipairs(word.awaited) do
    if awaited[3] < reset and (not up_to or awaited[1] <= up_to) then
      cost = cost + awaited[2]
    end
  end
  return cost
end

-- core::add_ceiling: the budget with `entry` added, what is redundant dropped, at most
-- k_max_budget_entries kept by merging the neighbours whose resets are nearest.
local function add_ceiling(budget, entry)
  for _, other in ipairs(budget) do
    if other[2] >= entry[2] and other[1] <= entry[1] then
      return budget
    end
  end
  local kept = {}
  for _, other in ipairs(budget) do
    if not (entry[2] >= other[2] and entry[1] <= other[1]) then
      kept[#kept + 1] = other
    end
  end
  local position = #kept + 1
  for i, other in ipairs(kept) do
    if other[2] > entry[2] then
      position = i
      break
    end
  end
  table.insert(kept, position, entry)
  while #kept > k_max_budget_entries do
    local nearest = 1
    for i = 2, #kept - 1 do
      if kept[i + 1][2] - kept[i][2] < kept[nearest + 1][2] - kept[nearest][2] then
        nearest = i
      end
    end
    kept[nearest + 1][1] = math.min(kept[nearest][1], kept[nearest + 1][1])
    table.remove(kept, nearest)
  end
  return kept
end

-- core::held_behind_probe: when the budget of `word` is stale at `open`, until when a grant
-- waits for the answer of the first probe on its way that `goes_before` it; nil when fresh or
-- no such probe.
local function held_behind_probe(word, open, goes_before)
  local running_until = 0
  for _, entry in ipairs(word.budget) do
    running_until = math.max(running_until, entry[2])
  end
  local span = running_until - word.answered_at
  if running_until <= open or word.answered_at == 0 or word.answered_at > open or
      open - word.answered_at < floor_div(span, k_stale_fraction) then
    return nil
  end
  local stale_from = word.answered_at + floor_div(span, k_stale_fraction)
  local probe = nil
  for _, awaited in ipairs(word.awaited) do
    if awaited[3] >= stale_from and awaited[4] > open and goes_before(awaited) then
      probe = math.min(probe or awaited[3], awaited[3])
    end
  end
  if not probe then
    return nil
  end
  local wait = math.max(floor_div(span, k_probe_wait_fraction),
                        word.answer_latency + floor_div(word.answer_latency, 2))
  local held = probe >= k_max_time - wait and k_max_time or probe + wait
  return math.min(held, running_until)
end

-- core::budget_open
local function budget_open(word, from, cost)
  local open = from
  for _, entry in ipairs(word.budget) do
    if entry[2] > open and entry[1] - word.grant_seq < cost then
      open = entry[2]
    end
  end
  local held = held_behind_probe(word, open, function(awaited)
    return awaited[3] <= open
  end)
  return held and math.max(held, open) or open
end

-- core::probe_held_until
local function probe_held_until(word, at_now, seq, at)
  local held = held_behind_probe(word, at_now, function(awaited)
    return awaited[1] ~= seq and (awaited[3] < at or (awaited[3] == at and awaited[1] < seq))
  end)
  return held and held > at_now and held or 0
end

-- core::count_grant: returns the grant's sequence.
local function count_grant(word, at_now, at, cost, answer_wait)
  local counted = math.min(cost, k_max_grant_seq)
  if word.grant_seq > k_max_grant_seq - counted then
    local base = word.grant_seq
    for _, entry in ipairs(word.budget) do
      entry[1] = clamp_ceiling(entry[1] - base)
    end
    for _, awaited in ipairs(word.awaited) do
      awaited[1] = clamp_ceiling(awaited[1] - base)
    end
    word.grant_seq = 0
  end
  word.grant_seq = word.grant_seq + counted
  for _, entry in ipairs(word.budget) do
    if entry[2] <= at then
      entry[1] = clamp_ceiling(entry[1] + counted)
    end
  end
  if answer_wait > 0 then
    local kept = {}
    for _, awaited in ipairs(word.awaited) do
      if not answer_ended(awaited, at_now) then
        kept[#kept + 1] = awaited
      end
    end
    if #kept >= k_max_awaited_answers then
      table.remove(kept, 1)
    end
    local until_time = answer_wait >= k_max_time - at and k_max_time or at + answer_wait
    kept[#kept + 1] = {word.grant_seq, counted, at, until_time}
    word.awaited = kept
  end
  return word.grant_seq
end

-- core::return_grant
local function return_grant(word, seq, cost, at)
  local counted = math.min(cost, k_max_grant_seq)
  for i, awaited in ipairs(word.awaited) do
    if awaited[1] == seq then
      if awaited[2] ~= counted then
        return
      end
      table.remove(word.awaited, i)
      for _, entry in ipairs(word.budget) do
        if entry[2] > at then
          entry[1] = clamp_ceiling(entry[1] + counted)
        end
      end
      return
    end
  end
end

-- core::forget_ended
local function forget_ended(word, at_now)
  local budget, awaited = {}, {}
  for _, entry in ipairs(word.budget) do
    if entry[2] > at_now then
      budget[#budget + 1] = entry
    end
  end
  for _, a in ipairs(word.awaited) do
    if not answer_ended(a, at_now) then
      awaited[#awaited + 1] = a
    end
  end
  word.budget, word.awaited = budget, awaited
end

-- core::observe_server for the standings {{remaining, reset_after}...} and the answered
-- grant (nil: unknown).
local function observe_server(word, at_now, standings, grant)
  forget_ended(word, at_now)
  local tracked = false
  local answered = word.grant_seq
  if grant then
    answered = math.min(grant, word.grant_seq)
    for i, awaited in ipairs(word.awaited) do
      if awaited[1] == grant then
        word.answer_latency = math.max(0, math.min(awaited[4] - awaited[3], at_now - awaited[3]))
        table.remove(word.awaited, i)
        tracked = true
        break
      end
    end
  end
  for _, standing in ipairs(standings) do
    if standing[2] > 0 then
      local reset = standing[2] >= k_max_time - at_now and k_max_time or at_now + standing[2]
      local ceiling = standing[1] + word.grant_seq - awaited_before(word, reset)
      if grant and not tracked then
        ceiling = math.min(ceiling, standing[1] + answered - awaited_before(word, reset, answered))
      end
      word.budget = add_ceiling(word.budget, {clamp_ceiling(ceiling), reset})
      word.answered_at = at_now
    end
  end
end

-- core::budget_standing: remaining and reset, or nil.
local function budget_standing(word, at_now)
  local remaining, reset = nil, nil
  for _, entry in ipairs(word.budget) do
    if entry[2] > at_now then
      local left = math.max(0, entry[1] - word.grant_seq)
      if not remaining or left < remaining then
        remaining, reset = left, entry[2]
      end
    end
  end
  return remaining, reset
end

-- core::server_word_until
local function server_word_until(word, at_now)
  local until_time = at_now
  for _, entry in ipairs(word.budget) do
    until_time = math.max(until_time, entry[2])
  end
  for _, awaited in ipairs(word.awaited) do
    until_time = math.max(until_time, awaited[4])
  end
  if word.adaptive then
    until_time = math.max(until_time, adaptive_until(word.adaptive))
  end
  return until_time
end

-- The word as stored: `grant_seq`, `budget` "ceiling reset ...", `awaited` "seq cost at ...".
local function encode_list(list)
  local words = {}
  for _, item in ipairs(list) do
    for _, value in ipairs(item) do
      words[#words + 1] = int(value)
    end
  end
  return table.concat(words, ' ')
end

-- The list of `width`-tuples in `text`, or nil when it is not one, or holds more than
-- `most`, or a value out of bounds (`check(value, index)`).
local function decode_list(text, width, most, check)
  local values = {}
  for word in string.gmatch(text or '', '%S+') do
    values[#values + 1] = tonumber(word)
  end
  if #values % width ~= 0 or #values / width > most then
    return nil
  end
  local list = {}
  for i = 1, #values, width do
    local item = {}
    for j = 1, width do
      if not values[i + j - 1] or not check(values[i + j - 1], j) then
        return nil
      end
      item[j] = values[i + j - 1]
    end
    list[#list + 1] = item
  end
  return list
end

local function is_ceiling(n)
  return is_exact(n) and n >= -k_max_ceiling and n <= k_max_ceiling
end

-- The word stored in the fields `seq`, `budget`, `awaited`, `answered` and `adaptive` of
-- the key's hash, or nil when it cannot be read (core::within_bounds).
local function decode_word(seq, budget, awaited, answered, adaptive)
  local word = {grant_seq = tonumber(seq or '0'), policies = '', answered_at = 0,
                answer_latency = 0, adaptive = decode_adaptive(adaptive)}
  if word.adaptive == false then
    return nil
  end
  local times = decode_list(answered, 2, 1, function(value, index)
    return index == 1 and (value == 0 or is_time(value)) or
             index == 2 and is_exact(value) and value >= 0 and value <= k_max_time
  end)
  if not times then
    return nil
  end
  if times[1] then
    word.answered_at, word.answer_latency = times[1][1], times[1][2]
  end
  if not word.grant_seq or not is_exact(word.grant_seq) or word.grant_seq < 0 or
      word.grant_seq > k_max_grant_seq then
    return nil
  end
  word.budget = decode_list(budget, 2, k_max_budget_entries, function(value, index)
    return index == 1 and is_ceiling(value) or index == 2 and is_time(value)
  end)
  word.awaited = decode_list(awaited, 4, k_max_awaited_answers, function(value, index)
    if index == 2 then
      return is_exact(value) and value >= 0 and value <= k_max_grant_seq
    end
    return index == 1 and is_ceiling(value) or index >= 3 and is_time(value)
  end)
  if not word.budget or not word.awaited then
    return nil
  end
  for i = 2, #word.budget do
    if word.budget[i][2] < word.budget[i - 1][2] then
      return nil
    end
  end
  return word
end

-- core::overdrawn_until: the latest reset of a ceiling the grants already passed, or 0.
local function overdrawn_until(word, at_now)
  local until_time = 0
  for _, entry in ipairs(word.budget) do
    if entry[2] > at_now and entry[1] < word.grant_seq then
      until_time = math.max(until_time, entry[2])
    end
  end
  return until_time
end
