-- An adaptive rate, mirroring src/core/adaptive_rate.cpp: the same law on the same
-- integers, times in microseconds. Rates are micro-requests per second, at most
-- k_max_adaptive_rate (10^15, below 2^53); every product that could pass 2^53 goes through
-- mul_div, or is capped where the C++ caps it. A state is a table {max_rate, cut_at,
-- successes, measured_from, clock, next_slot}.

-- core::micro_rate of a limit of `count` per `period` microseconds: count * 10^12 / period,
-- within [1, k_max_adaptive_rate].
local function micro_rate(count, period)
  if count >= (k_max_adaptive_rate / k_rate_scale_micros) * period then
    return k_max_adaptive_rate
  end
  return math.max(1, (mul_div(count, k_rate_scale_micros, period)))
end

-- core::adaptive_ceiling, as a micro rate: the slowest of `limits`.
local function adaptive_ceiling(limits)
  local slowest
  for _, limit in ipairs(limits) do
    local rate = micro_rate(limit.count, limit.period)
    if not slowest or rate < slowest then
      slowest = rate
    end
  end
  return slowest
end

-- The time one grant takes at `rate`, rounded up, at most k_max_interval.
local function interval_of(rate)
  return math.min(ceil_div(k_rate_scale_micros, rate), k_max_interval)
end

local function measuring_window(rate)
  return math.max(k_least_round, k_round_grants * interval_of(rate))
end

-- core::adaptive_floor under the ceiling `top` (a micro rate).
local function adaptive_floor(top)
  return math.max(floor_div(top, k_floor_divisor), math.min(top, k_least_floor))
end

local function round_after_cut(max_rate, top)
  local cut = math.max(adaptive_floor(top), floor_div(max_rate * k_cut_numerator,
                                                      k_cut_denominator))
  return measuring_window(cut)
end

-- core::adaptive_recovery
local function adaptive_recovery(max_rate)
  return math.max(k_least_recovery, k_recovery_grants * interval_of(math.max(max_rate, 1)))
end

-- floor(term * fraction / 2^k_fraction_bits), at most k_max_adaptive_rate.
local function scale_term(term, fraction)
  local one = 2 ^ k_fraction_bits
  if fraction > one then
    local most = mul_div(k_max_adaptive_rate, one, fraction)
    if term > most then
      return k_max_adaptive_rate
    end
  end
  return math.min((mul_div(term, fraction, one)), k_max_adaptive_rate)
end

-- core::effective_micro_rate under the ceiling `top`.
local function effective_micro_rate(adaptive, top, at_now)
  if adaptive.max_rate == 0 then
    return top
  end
  at_now = math.max(at_now, adaptive.clock)
  local since = math.max(at_now - adaptive.cut_at, 0)
  local recovery = adaptive_recovery(adaptive.max_rate)
  local distance = since >= recovery and since - recovery or recovery - since
  local fraction = k_max_fraction
  if distance < 2 ^ (30 - k_fraction_bits) * recovery then
    fraction = mul_div(distance, 2 ^ k_fraction_bits, recovery)
  end
  local term = floor_div(adaptive.max_rate * (k_cut_denominator - k_cut_numerator),
                         k_cut_denominator)
  for _ = 1, 3 do
    term = scale_term(term, fraction)
  end
  local rate = since >= recovery and adaptive.max_rate + term or adaptive.max_rate - term
  return math.max(adaptive_floor(top), math.min(rate, top))
end

-- core::adaptive_interval: the time a grant of `cost` takes at the rate at `at_now`.
local function adaptive_interval(adaptive, top, at_now, cost)
  local rate = effective_micro_rate(adaptive, top, at_now)
  return math.min(ceil_div(k_rate_scale_micros, rate) * cost, k_max_duration)
end

-- core::adaptive_until
local function adaptive_until(adaptive)
  local until_time = adaptive.next_slot
  if adaptive.max_rate ~= 0 then
    until_time = math.max(until_time, adaptive.cut_at + 8 * adaptive_recovery(adaptive.max_rate))
  end
  return until_time
end

-- core::adapt: the state after a throttle (`throttled`) or a success at `at_now`.
local function adapt(adaptive, top, throttled, at_now)
  local next = {max_rate = adaptive.max_rate, cut_at = adaptive.cut_at,
                successes = adaptive.successes, measured_from = adaptive.measured_from,
                clock = adaptive.clock, next_slot = adaptive.next_slot}
  at_now = math.max(at_now, adaptive.clock)
  next.clock = at_now
  if next.measured_from == 0 then
    next.measured_from = at_now
  end
  local current = effective_micro_rate(adaptive, top, at_now)
  local window = measuring_window(current)
  local measured_for = at_now - next.measured_from
  if measured_for > k_windows_before_folding * window then
    local kept = k_windows_kept * window
    if measured_for > k_longest_measure then
      next.successes = 0
    else
      next.successes = mul_div(next.successes, kept, measured_for)
    end
    next.measured_from = at_now - kept
    measured_for = kept
  end
  if not throttled then
    next.successes = math.min(next.successes + k_success_unit, k_max_successes)
    return next
  end
  if adaptive.max_rate ~= 0 and at_now - adaptive.cut_at < round_after_cut(adaptive.max_rate, top) then
    return next -- the same overload as the last cut
  end
  local basis = current
  if measured_for >= window and next.successes >= k_success_unit then
    local measured = mul_div(next.successes, k_rate_scale_micros, measured_for * k_success_unit)
    basis = math.min(measured, current)
  end
  next.max_rate = math.max(adaptive_floor(top), math.min(basis, top))
  next.cut_at = at_now
  next.successes = 0
  next.measured_from = at_now
  return next
end

-- What --adaptive does to a key's decisions (src/core/adaptive_key.cpp).

-- core::adaptive_ceiling under the limits of the key's last call (`states`, not empty).
local function ceiling_of_states(states)
  local limits = {}
  for i, s in ipairs(states) do
    limits[i] = s.limit
  end
  return adaptive_ceiling(limits)
end

-- core::spaced_slot: for an --adaptive request whose slot is at least `at`, the slot the
-- spacing allows; the rate is made on the key's first such call.
local function spaced_slot(word, limits, at, decision)
  if not word.adaptive then
    word.adaptive = {max_rate = 0, cut_at = 0, successes = 0, measured_from = 0, clock = 0,
                     next_slot = 0}
  end
  decision.adaptive_rate = effective_micro_rate(word.adaptive, adaptive_ceiling(limits),
                                                decision.now)
  if word.adaptive.next_slot > at then
    decision.spaced_until = word.adaptive.next_slot
    return word.adaptive.next_slot
  end
  return at
end

-- core::space_after: the next grant's slot spaced from `grant` at the rate at `at_now`.
local function space_after(adaptive, limits, at_now, grant)
  grant.paced = adaptive_interval(adaptive, adaptive_ceiling(limits), at_now, grant.cost)
  adaptive.next_slot = grant.paced >= k_max_time - grant.at and k_max_time or
                         grant.at + grant.paced
end

-- core::return_spacing: a grant given back before its slot returns the spacing it took.
local function return_spacing(word, grant, clock)
  if grant.paced > 0 and grant.at >= clock and word.adaptive then
    word.adaptive.next_slot = math.max(clock, word.adaptive.next_slot - grant.paced)
  end
end

-- core::learn_from_answer
local function learn_from_answer(word, states, observation, at_now)
  if not word.adaptive or #states == 0 or not (observation.throttled or observation.answered) then
    return
  end
  word.adaptive = adapt(word.adaptive, ceiling_of_states(states), observation.throttled, at_now)
end

-- The state as stored in the field `adaptive` of the key's hash: its six integers.
local function encode_adaptive(adaptive)
  return table.concat({int(adaptive.max_rate), int(adaptive.cut_at), int(adaptive.successes),
                       int(adaptive.measured_from), int(adaptive.clock),
                       int(adaptive.next_slot)}, ' ')
end

-- The state stored as `text`, nil for none, or false when it is not one this script writes
-- (core::within_bounds).
local function decode_adaptive(text)
  if not text then
    return nil
  end
  local values = {}
  for word in string.gmatch(text, '%S+') do
    values[#values + 1] = tonumber(word)
  end
  if #values ~= 6 then
    return false
  end
  for i, value in ipairs(values) do
    if not is_exact(value) then
      return false
    end
    if (i == 2 or i >= 4) and not is_time(value) then
      return false
    end
  end
  local adaptive = {max_rate = values[1], cut_at = values[2], successes = values[3],
                    measured_from = values[4], clock = values[5], next_slot = values[6]}
  if adaptive.max_rate < 0 or adaptive.max_rate > k_max_adaptive_rate or
      adaptive.successes < 0 or adaptive.successes > k_max_successes then
    return false
  end
  return adaptive
end
