#include "core/algorithm.hpp"

#include "util/near_miss.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string>
#include <vector>

namespace ratelimit::core {

const Rules& token_bucket_rules();
const Rules& leaky_bucket_rules();
const Rules& fixed_window_rules();
const Rules& sliding_window_rules();
const Rules& sliding_log_rules();

namespace {

constexpr SlotKind k_time = SlotKind::time;
constexpr SlotKind k_cost = SlotKind::cost;

// In the order of k_all_algorithms. The slots and their sizes are documented with each
// algorithm's rules (core/token_bucket.cpp, ...).
constexpr AlgorithmInfo k_algorithms[] = {
    // The theoretical arrival time; the latest grant still standing; unused.
    {Algorithm::token_bucket, "token-bucket", true, true, false, true, {k_time, k_time, k_time},
     8, token_bucket_rules},
    // The next free output time; unused; unused. Its grants leave one interval apart.
    {Algorithm::leaky_bucket, "leaky-bucket", true, false, false, false,
     {k_time, k_time, k_time}, 8, leaky_bucket_rules},
    // The start of the latest window with grants; the cost granted in it; the latest grant.
    {Algorithm::fixed_window, "fixed-window", false, false, false, true, {k_time, k_cost, k_time},
     16, fixed_window_rules},
    // The latest grant, whose window is the current one; its cost; the previous window's cost.
    {Algorithm::sliding_window, "sliding-window", false, false, false, true,
     {k_time, k_cost, k_cost}, 24, sliding_window_rules},
    // The last grant; the cumulative cost of all grants; of those already forgotten.
    {Algorithm::sliding_log, "sliding-log", false, false, true, true, {k_time, k_cost, k_cost},
     24, sliding_log_rules},
};

constexpr bool table_follows_the_enumeration() {
  if (std::size(k_algorithms) != std::size(k_all_algorithms)) {
    return false;
  }
  for (std::size_t i = 0; i < std::size(k_algorithms); ++i) {
    if (k_algorithms[i].algorithm != k_all_algorithms[i] ||
        static_cast<std::size_t>(k_algorithms[i].algorithm) != i) {
      return false;
    }
  }
  return true;
}
static_assert(table_follows_the_enumeration(), "one entry per algorithm, in enumeration order");

} // namespace

const AlgorithmInfo& info(Algorithm algorithm) {
  return k_algorithms[static_cast<std::size_t>(algorithm)];
}

std::string_view algorithm_name(Algorithm algorithm) { return info(algorithm).name; }

Result<Algorithm> parse_algorithm(std::string_view name) {
  std::vector<std::string> names;
  for (const AlgorithmInfo& entry : k_algorithms) {
    if (entry.name == name) {
      return entry.algorithm;
    }
    names.emplace_back(entry.name);
  }
  std::string message = fmt::format("unknown algorithm \"{}\"", name.substr(0, 64));
  if (auto nearest = util::near_miss(name, names)) {
    message += fmt::format("; did you mean \"{}\"?", *nearest);
  }
  message += fmt::format("; expected one of {}", fmt::join(names, ", "));
  return Result<Algorithm>::failure(message);
}

} // namespace ratelimit::core
