#pragma once

#include "core/limit.hpp"

#include <cstdint>

namespace ratelimit::core {

// How far times and counts may go, in what a key stores and in what a decision grants.
// Far enough inside int64 that the algorithms' arithmetic (a time plus a few periods or
// a bucket's refill, a difference of two times) cannot overflow, and inside the 2^53 that
// the Redis script's doubles hold exactly (its times are microseconds). The Lua script
// (src/store/redis/lua/arith.lua) applies the same bounds.

// The latest time: 2^62 ns after the epoch, in the year 2116. A clock past it is beyond
// the supported range; a slot past it is too far away to be granted.
inline constexpr Nanos k_max_time = Nanos{1} << 62;
// The earliest stored time, 2^60 ns before the epoch (1933): only ever approached by a
// bucket's times after reservations near the epoch were given back.
inline constexpr Nanos k_min_time = -(Nanos{1} << 60);
// The most cost a window algorithm counts in one slot (a sliding log counts every grant
// the key ever had).
inline constexpr std::int64_t k_max_total = (std::int64_t{1} << 53) - 1;
// Where the windows' counts and KeyState::granted saturate: far above any limit's N
// (k_max_count), so that a saturated count still holds every window full, and below 2^51,
// so that the Redis script divides by it exactly. It stands for any number: a key would
// have to grant 10^15 units before a store forgets its state to pass it.
inline constexpr std::int64_t k_max_window_count = std::int64_t{1} << 50;

// `count` plus `cost`, saturated at k_max_window_count.
inline std::int64_t add_window_count(std::int64_t count, std::int64_t cost) {
  return count >= k_max_window_count - cost ? k_max_window_count : count + cost;
}

// Whether `state` could have been stored by this program: limits that check_limits
// accepts, its clock and slots within the bounds above. A state that is not is damaged.
bool within_bounds(const KeyState& state);

// Whether granting `cost` at `at` under `limit`, whose state is `slots`, keeps everything
// the algorithm stores within the bounds: `at` itself, a bucket's next time
// (max(slot 0, at) + cost * interval, which also bounds a window's start) and a window's
// count (slot 1 plus cost).
bool fits_within_bounds(Algorithm algorithm, const Limit& limit,
                        const std::array<std::int64_t, 3>& slots, Nanos at, std::int64_t cost);

} // namespace ratelimit::core
