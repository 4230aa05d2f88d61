#include "core/algorithm.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace ratelimit::core {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

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
  std::string_view nearest;
  std::size_t nearest_distance = 0;
  for (Algorithm algorithm : k_all_algorithms) {
    std::string_view candidate = algorithm_name(algorithm);
    if (candidate == name) {
      return algorithm;
    }
    std::size_t distance = edit_distance(name.substr(0, 64), candidate);
    if (nearest.empty() || distance < nearest_distance) {
      nearest = candidate;
      nearest_distance = distance;
    }
  }
  std::string message = fmt::format("unknown algorithm \"{}\"", name.substr(0, 64));
  if (nearest_distance <= 3) {
    message += fmt::format("; did you mean \"{}\"?", nearest);
  }
  message += "; expected one of token-bucket, leaky-bucket, fixed-window, sliding-window, "
             "sliding-log";
  return Result<Algorithm>::failure(message);
}

bool takes_burst(Algorithm algorithm) {
  return algorithm == Algorithm::token_bucket || algorithm == Algorithm::leaky_bucket;
}

} // namespace ratelimit::core
