#pragma once

#include "core/result.hpp"

#include <array>
#include <cstdint>
#include <string_view>

namespace ratelimit::core {

class Rules;

enum class Algorithm {
  token_bucket,
  leaky_bucket,
  fixed_window,
  sliding_window,
  sliding_log,
};

inline constexpr Algorithm k_all_algorithms[] = {Algorithm::token_bucket, Algorithm::leaky_bucket,
                                                 Algorithm::fixed_window, Algorithm::sliding_window,
                                                 Algorithm::sliding_log};

// What one of the three slots of a limit's stored state holds (see each algorithm's rules):
// a time, in the store's unit, or an amount of cost. An unused slot holds 0.
enum class SlotKind { time, cost };

// One algorithm, described once: what decisions, both stores (the Redis script through
// the prelude generated from this table), simulate, the CLI and the documentation tests
// need to know of it besides its rules. docs/architecture.md lists what a sixth algorithm
// takes: an entry here, its Rules (core/rules.hpp) and their Lua mirror, its tests and
// documentation.
struct AlgorithmInfo {
  Algorithm algorithm;
  // The name users type and the documentation uses: `token-bucket`, `sliding-log`, ...
  std::string_view name;
  // Whether a burst means something: a token bucket's capacity, a leaky bucket's queue
  // depth. The others refuse one.
  bool takes_burst;
  // Whether one request may take up to BURST units (the token bucket), rather than N.
  bool cost_up_to_burst;
  // Whether the key keeps one log of its grants besides the slots (stored apart: SQLite
  // rows, Redis sorted sets).
  bool keeps_log;
  // Whether n requests granted at one instant leave a key exactly as one request of n times
  // the cost, so that `pipe` may decide records released together at once.
  bool instant_grants_combine;
  // What each slot of a limit's state holds.
  std::array<SlotKind, 3> slots;
  // The bytes of per-limit state it reads and writes, a log's entries apart.
  std::int64_t state_bytes;
  // Its rules.
  const Rules& (*rules)();
};

// The entry of `algorithm`.
const AlgorithmInfo& info(Algorithm algorithm);

// The name users type: `token-bucket`, `sliding-log`, ...
std::string_view algorithm_name(Algorithm algorithm);

// The inverse of `algorithm_name`; the error suggests the nearest name.
Result<Algorithm> parse_algorithm(std::string_view name);

// The algorithm of a call that names none: the exact sliding log, which never admits more
// than N in any PERIOD; or, when the call gives a burst (a token-bucket notion), the token
// bucket.
inline constexpr Algorithm default_algorithm(bool burst_given) {
  return burst_given ? Algorithm::token_bucket : Algorithm::sliding_log;
}

// Whether a burst means something for `algorithm` (bucket capacity or queue depth).
inline bool takes_burst(Algorithm algorithm) {
  return info(algorithm).takes_burst;
}

} // namespace ratelimit::core
