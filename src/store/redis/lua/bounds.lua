-- How far times and counts may go, mirroring src/core/bounds.cpp with its bounds in
-- microseconds (the prelude's k_min_time, k_max_time, k_max_total, k_max_count,
-- k_max_duration): inside them every sum and difference the rules compute is an exact
-- integer of a double.

local function is_time(n)
  return n ~= nil and is_exact(n) and n >= k_min_time and n <= k_max_time
end

local function is_total(n)
  return n ~= nil and is_exact(n) and n >= 0 and n <= k_max_total
end

-- The same bounds as parse_rate and check_limits. A bucket's refill may pass twice the
-- longest period by a microsecond per unit of burst: the periods here are rounded up to
-- whole microseconds.
local function is_limit(algorithm, limit)
  local count, period, burst = limit.count, limit.period, limit.burst
  if count < 1 or count > k_max_count or count > period * k_nanos_per_micro or
      period > k_max_duration or burst < 1 or burst > k_max_total then
    return false
  end
  if algorithm.takes_burst then
    return burst * limit.interval <= 2 * k_max_duration + burst
  end
  return burst <= k_max_count
end

-- core::within_bounds: whether `state` could have been stored by this program (or by the
-- C++ code, for a key that moved between the stores): its limits, its clock and its slots
-- within the bounds.
local function within_bounds(state)
  if not is_time(state.clock) or not is_time(state.paused_until) or state.granted < 0 or
      state.granted > k_max_window_count then
    return false
  end
  local algorithm = algorithm_of(state)
  local function within(s)
    for i, kind in ipairs(algorithm.slots) do
      if kind == 'time' and not is_time(s.slots[i]) or
          kind == 'cost' and not is_total(s.slots[i]) then
        return false
      end
    end
    return is_limit(algorithm, s.limit)
  end
  for _, list in ipairs({state.limits, state.remembered}) do
    for _, s in ipairs(list) do
      if not within(s) then
        return false
      end
    end
  end
  return #state.remembered == 0 or algorithm.remembers_unnamed
end

-- core::fits_within_bounds: whether granting `cost` at `at` keeps what the algorithm stores
-- within the bounds.
local function fits_within_bounds(algorithm, limit, slots, at, cost)
  local next = math.max(at, slots[1]) + cost * limit.interval
  if at > k_max_time or next > k_max_time then
    return false
  end
  return algorithm.takes_burst or slots[2] + cost <= k_max_total
end
