#include "core/algorithm.hpp"

#include "core/rules.hpp"

#include <doctest/doctest.h>
#include <set>
#include <string>

using namespace ratelimit::core;

TEST_CASE("core::info has one entry per algorithm, found by its name") {
  std::set<std::string_view> names;
  for (Algorithm algorithm : k_all_algorithms) {
    const AlgorithmInfo& entry = info(algorithm);
    CAPTURE(entry.name);
    CHECK(entry.algorithm == algorithm);
    CHECK(names.insert(entry.name).second);
    auto parsed = parse_algorithm(entry.name);
    REQUIRE(parsed);
    CHECK(*parsed == algorithm);
    CHECK(algorithm_name(algorithm) == entry.name);
  }
}

TEST_CASE("core::info agrees with each algorithm's rules") {
  for (Algorithm algorithm : k_all_algorithms) {
    const AlgorithmInfo& entry = info(algorithm);
    CAPTURE(entry.name);
    // The log is the key's one state: its rules take and give back once for all limits.
    CHECK(entry.rules().shares_state() == entry.keeps_log);
    CHECK(&entry.rules() == &rules_for(algorithm));
    // A burst is a bucket's: a log or a window never takes one, nor lets a request exceed N.
    if (entry.cost_up_to_burst) {
      CHECK(entry.takes_burst);
    }
    CHECK_FALSE((entry.keeps_log && entry.takes_burst));
    // Every algorithm's first slot is a time, which stores convert between units.
    CHECK(entry.slots[0] == SlotKind::time);
    CHECK(entry.state_bytes > 0);
  }
}

TEST_CASE("core::parse_algorithm names every algorithm when it refuses one") {
  auto refused = parse_algorithm("token_bucket");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().find("did you mean \"token-bucket\"?") != std::string::npos);
  for (Algorithm algorithm : k_all_algorithms) {
    CHECK(refused.error().find(std::string(algorithm_name(algorithm))) != std::string::npos);
  }
}
