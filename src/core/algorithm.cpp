#include "core/algorithm.hpp"

#include "util/near_miss.hpp"

#include <fmt/format.h>
#include <string>
#include <vector>

namespace ratelimit::core {

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
  case Algorithm::token_bucket:
    return "token-bucket";
  case Algorithm::leaky_bucket:
    return "leaky-bucket";
  case Algorithm::fixed_window:
    return "fixed-window";
  case Algorithm::sliding_window:
    return "sliding-window";
  case Algorithm::sliding_log:
    return "sliding-log";
  }
  return "?";
}

Result<Algorithm> parse_algorithm(std::string_view name) {
  for (Algorithm algorithm : k_all_algorithms) {
    if (algorithm_name(algorithm) == name) {
      return algorithm;
    }
  }
  std::string message = fmt::format("unknown algorithm \"{}\"", name.substr(0, 64));
  std::vector<std::string> names;
  for (Algorithm algorithm : k_all_algorithms) {
    names.emplace_back(algorithm_name(algorithm));
  }
  if (auto nearest = util::near_miss(name, names)) {
    message += fmt::format("; did you mean \"{}\"?", *nearest);
  }
  message += "; expected one of token-bucket, leaky-bucket, fixed-window, sliding-window, "
             "sliding-log";
  return Result<Algorithm>::failure(message);
}

bool takes_burst(Algorithm algorithm) {
  return algorithm == Algorithm::token_bucket || algorithm == Algorithm::leaky_bucket;
}

} // namespace ratelimit::core
