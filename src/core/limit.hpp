#pragma once

#include "core/algorithm.hpp"
#include "core/rate.hpp"
#include "core/server_budget.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ratelimit::core {

// One limit on a key: `rate`, and for the buckets a `burst` (token-bucket capacity,
// leaky-bucket queue depth). Window algorithms use `rate.count` as their size.
struct Limit {
  Rate rate;
  std::int64_t burst = 0;

  // The most cost the algorithm can ever hold for this limit.
  std::int64_t capacity(Algorithm algorithm) const {
    return takes_burst(algorithm) ? burst : rate.count;
  }

  // The most cost one request may take: a token bucket's capacity; for the others N, the
  // most any PERIOD may hold (a leaky bucket's queue depth bounds waiting, not cost).
  std::int64_t max_cost(Algorithm algorithm) const {
    return info(algorithm).cost_up_to_burst ? burst : rate.count;
  }

  friend bool operator==(const Limit&, const Limit&) = default;
};

// The stored state of one limit of one key. What the three slots mean belongs to the algorithm (see
// rules.hpp); all zero is a fresh key.
struct LimitState {
  Limit limit;
  std::array<std::int64_t, 3> slots{};

  friend bool operator==(const LimitState&, const LimitState&) = default;
};

// Everything stored for one key besides a sliding log's entries. A key with no limits holds
// only what a server said (`ratelimit pause` or `observe` on a key never used): it belongs
// to no algorithm yet, and `algorithm` means nothing until a call names one.
struct KeyState {
  Algorithm algorithm = Algorithm::token_bucket;
  // The latest time this key has seen: a key's clock never runs backwards, so a system
  // clock stepped back grants nothing that was not already available.
  Nanos clock = 0;
  // The limits of the key's last call, and their state: a limit that a call no longer
  // names is not kept (what it had in use carries over to the limits named instead).
  std::vector<LimitState> limits;
  // The states of limits that earlier calls named and the last call did not, while the key
  // needs them (Rules::keeps_remembered). Buckets and windows: every grant takes from them
  // too (they decide nothing), so that a call naming one again finds in use what the key
  // granted, counted at its rate from the first, instead of converted from another rate at
  // every change of limits; a bucket's as long as they hold something, a window's as long
  // as the key's state. Sliding log: the key's slots as they were after such a call, while
  // a grant of it may still share its time with a later one (Rules::protect).
  std::vector<LimitState> remembered{};
  // Sliding log: the longest period any call on the key has named. The key's one log keeps
  // the grants of that long, so that no limit, however long its period, misses any.
  Nanos log_period = 0;
  // Windows: the cost the key has granted since its state was made (a store forgets the
  // state of a fresh key), saturated at k_max_window_count (bounds.hpp), which is also what
  // a state stored by an earlier version reads as: any number. A limit the key does not
  // hold finds at most this much in its windows where the stored windows cannot tell
  // (Rules::carry).
  std::int64_t granted = 0;
  // Until when the key grants nothing to anyone, whatever its limits (`ratelimit pause`);
  // a time in the past, 0 included, is no pause.
  Nanos paused_until = 0;
  // What the servers' answers said besides a pause (`ratelimit observe`): the server budget,
  // the grants awaiting their answers, the learned policies, and the grant sequence they
  // count by. A key that holds only a pause may hold these too.
  ServerWord server{};
};

// The ceiling of an adaptive rate under `limits` (not empty): the slowest of their rates,
// the one the key can keep up for ever.
Rate adaptive_ceiling(std::span<const Limit> limits);

// Why `limits` cannot serve a request of `cost`, or nothing when they can: an empty list,
// two limits with one period, a burst given to a window algorithm, a cost that could never
// be granted.
std::optional<std::string> check_limits(Algorithm algorithm, std::span<const Limit> limits,
                                        std::int64_t cost, bool burst_given);

} // namespace ratelimit::core
