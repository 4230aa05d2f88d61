-- Exact integer arithmetic on Lua numbers. Redis runs Lua 5.1, whose numbers are doubles:
-- they hold every integer below 2^53 exactly. Times are microseconds since the epoch
-- (~1.8e15, below 2^53 until the year 2255), so sums and differences of times and counts
-- stay exact; quotients go through floor_div, and products of a count and a duration,
-- which may pass 2^53, through mul_div.

-- floor(a / b) for b > 0 and |a| < 2^53: the double quotient may be off by one, and the
-- remainder tells which way.
local function floor_div(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
  elseif r >= b then
    q = q + 1
  end
  return q
end

-- ceil(a / b) for b > 0.
local function ceil_div(a, b)
  return -floor_div(-a, b)
end

-- q, r with a * b = q * c + r and 0 <= r < c, for 0 <= a, b < 2^53, 0 < c < 2^51 and a
-- quotient below 2^53. Long multiplication over the bits of `a` keeps every intermediate
-- value below 2^53.
local function mul_div(a, b, c)
  local product = a * b
  if product < k_exact then
    local q = floor_div(product, c)
    return q, product - q * c
  end
  local bq = floor_div(b, c)
  local br = b - bq * c
  local bits = {}
  while a > 0 do
    local half = math.floor(a / 2)
    bits[#bits + 1] = a - 2 * half
    a = half
  end
  local q, r = 0, 0
  for i = #bits, 1, -1 do
    q, r = 2 * q, 2 * r
    if r >= c then
      q, r = q + 1, r - c
    end
    if bits[i] == 1 then
      q, r = q + bq, r + br
      if r >= c then
        q, r = q + 1, r - c
      end
    end
  end
  return q, r
end

-- `n` as the decimal integer Redis stores; tostring would print 1.77e+15.
local function int(n)
  return string.format('%d', n)
end

-- Whether `n` is a whole number that survives a round trip through a double exactly.
local function is_exact(n)
  return n > -k_exact and n < k_exact and n == math.floor(n)
end

-- `count` plus `cost`, saturated at the prelude's k_max_window_count
-- (core::add_window_count).
local function add_window_count(count, cost)
  if count >= k_max_window_count - cost then
    return k_max_window_count
  end
  return count + cost
end

-- `duration` of use at the interval `from`, as a duration at the interval `to`, rounded up
-- (core::rescale); saturates at k_far (the prelude), 73 years.
local function rescale(duration, from, to)
  if duration <= 0 then
    return 0
  end
  if duration / from * to >= k_far then
    return k_far
  end
  local q, r = mul_div(duration, to, from)
  if r > 0 then
    q = q + 1
  end
  return q
end
