#pragma once

#include "core/result.hpp"

#include <string_view>

namespace ratelimit::core {

enum class Algorithm {
  token_bucket,
  leaky_bucket,
  fixed_window,
  sliding_window,
  sliding_log,
};

inline constexpr Algorithm k_all_algorithms[] = {
    Algorithm::token_bucket, Algorithm::leaky_bucket, Algorithm::fixed_window,
    Algorithm::sliding_window, Algorithm::sliding_log};

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

// Whether `--burst` means something for `algorithm` (bucket capacity or queue depth).
bool takes_burst(Algorithm algorithm);

} // namespace ratelimit::core
