#include "core/decide.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;

namespace {

constexpr Nanos k_second = k_nanos_per_second;

} // namespace

TEST_CASE("core::inspect tells when a try would be granted, and changes nothing") {
  std::vector<Limit> limits{{{2, k_second}, 2}, {{3, 10 * k_second}, 3}};
  KeyState state;
  MemoryGrantLog log;
  Nanos now = 100 * k_second;
  Request request;
  request.now = now;
  REQUIRE(decide(state, limits, log, request).allowed);
  REQUIRE(decide(state, limits, log, request).allowed);

  KeyState before = state;
  Decision standing = inspect(state, log, now);
  CHECK_FALSE(standing.allowed);
  CHECK(standing.remaining == 0);
  CHECK(standing.wait == k_second / 2);
  CHECK(standing.binding == 0);
  CHECK(standing.limits[0].retry_after == k_second / 2);
  CHECK(standing.limits[1].retry_after == 0);
  CHECK(standing.limits[1].remaining == 1);
  CHECK(standing.reset_after == 2 * ceil_div(10 * k_second, 3));
  CHECK(state.clock == before.clock);
  CHECK(state.limits == before.limits);

  // The same question later: granted, and the try agrees.
  standing = inspect(state, log, now + k_second / 2);
  CHECK(standing.allowed);
  CHECK(standing.wait == 0);
  request.now = now + k_second / 2;
  CHECK(decide(state, limits, log, request).allowed);
}

TEST_CASE("core::is_fresh holds once every stored limit has forgotten its grants") {
  std::vector<Limit> limits{{{1, k_second}, 1}, {{2, 10 * k_second}, 2}};
  for (Algorithm algorithm : k_all_algorithms) {
    CAPTURE(algorithm_name(algorithm));
    KeyState state;
    state.algorithm = algorithm;
    MemoryGrantLog log;
    Request request;
    request.now = 1'000 * k_second;
    CHECK(is_fresh(state, log, request.now));
    REQUIRE(decide(state, limits, log, request).allowed);
    CHECK_FALSE(is_fresh(state, log, request.now));
    Nanos fresh_at = request.now + inspect(state, log, request.now).reset_after;
    CHECK_FALSE(is_fresh(state, log, fresh_at - 1));
    CHECK(is_fresh(state, log, fresh_at));
  }
}
