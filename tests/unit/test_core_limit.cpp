#include "core/limit.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>
#include <vector>

using namespace ratelimit::core;
using namespace ratelimit::core::testing;

namespace {

std::optional<std::string> check(Algorithm algorithm, std::vector<Limit> limits,
                                 std::int64_t cost = 1, bool burst_given = false) {
  return check_limits(algorithm, limits, cost, burst_given);
}

bool mentions(const std::optional<std::string>& problem, std::string_view text) {
  return problem && problem->find(text) != std::string::npos;
}

} // namespace

TEST_CASE("core::check_limits accepts every algorithm with its defaults") {
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    CHECK_FALSE(check(algorithm, {limit_of(10, k_s)}));
    CHECK_FALSE(check(algorithm, {limit_of(5, k_s), limit_of(5000, 3600 * k_s)}, 5));
  }
}

TEST_CASE("core::check_limits needs a rate") {
  CHECK(mentions(check(Algorithm::token_bucket, {}), "no rate given"));
}

TEST_CASE("core::check_limits refuses a burst with a window algorithm") {
  for (Algorithm algorithm :
       {Algorithm::fixed_window, Algorithm::sliding_window, Algorithm::sliding_log}) {
    CAPTURE(algorithm_name(algorithm));
    auto problem = check(algorithm, {limit_of(10, k_s)}, 1, true);
    CHECK(mentions(problem, "a burst does not apply to"));
    CHECK(mentions(problem, algorithm_name(algorithm)));
  }
  CHECK_FALSE(check(Algorithm::token_bucket, {limit_of(10, k_s, 20)}, 1, true));
  CHECK_FALSE(check(Algorithm::leaky_bucket, {limit_of(10, k_s, 3)}, 1, true));
}

TEST_CASE("core::check_limits refuses a cost above what the limit can ever hold") {
  // Windows and the leaky bucket hold N; the token bucket holds its burst.
  CHECK_FALSE(check(Algorithm::fixed_window, {limit_of(10, k_s)}, 10));
  CHECK(mentions(check(Algorithm::fixed_window, {limit_of(10, k_s)}, 11),
                 "cost 11 can never be granted: fixed-window 10/s holds at most 10"));
  CHECK(mentions(check(Algorithm::sliding_log, {limit_of(10, k_s), limit_of(5, k_min)}, 6),
                 "sliding-log 5/min holds at most 5"));
  CHECK(mentions(check(Algorithm::sliding_window, {limit_of(3, k_s)}, 4), "can never be granted"));
  CHECK_FALSE(check(Algorithm::token_bucket, {limit_of(10, k_s, 20)}, 20));
  CHECK(mentions(check(Algorithm::token_bucket, {limit_of(10, k_s, 4)}, 5),
                 "token-bucket 10/s holds at most 4"));
  // A leaky bucket's queue depth bounds waiting, not cost: a request costs at most N.
  CHECK_FALSE(check(Algorithm::leaky_bucket, {limit_of(10, k_s, 2)}, 3));
  CHECK(mentions(check(Algorithm::leaky_bucket, {limit_of(10, k_s, 2)}, 11),
                 "leaky-bucket 10/s holds at most 10"));
}

TEST_CASE("core::check_limits refuses a cost or burst below one") {
  CHECK(mentions(check(Algorithm::token_bucket, {limit_of(10, k_s)}, 0), "invalid cost 0"));
  Limit no_burst = limit_of(10, k_s);
  no_burst.burst = 0;
  CHECK(mentions(check(Algorithm::token_bucket, {no_burst}), "invalid burst 0"));
}

TEST_CASE("core::check_limits refuses two rates with one period") {
  CHECK(mentions(check(Algorithm::token_bucket, {limit_of(5, k_s), limit_of(10, 1000 * k_ms)}),
                 "two rates with the same period (5/s and 10/s)"));
}

TEST_CASE("core::check_limits refuses a burst that would take decades to refill") {
  // One per 10 years with a burst of 3: 30 years of refill, out of the range of times.
  Limit slow = limit_of(1, 3650 * 24 * 3600 * k_s, 3);
  CHECK(mentions(check(Algorithm::token_bucket, {slow}, 1, true), "invalid burst 3"));
  CHECK(mentions(check(Algorithm::leaky_bucket, {slow}, 1, true), "more than 20 years"));
  slow.burst = 2;
  CHECK_FALSE(check(Algorithm::token_bucket, {slow}, 1, true));
  CHECK(mentions(
      check(Algorithm::token_bucket, {limit_of(10, k_s, 9'000'000'000'000'000'000)}, 1, true),
      "expected at most"));
}
