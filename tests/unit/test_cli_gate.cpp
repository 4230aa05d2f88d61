#include "cli/gate.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using core::Algorithm;
using core::Nanos;

namespace {

constexpr Nanos k_second = core::k_nanos_per_second;

cli::LimitedRequest request_for(Algorithm algorithm, std::int64_t cost) {
  cli::LimitedRequest request;
  request.algorithm = algorithm;
  request.cost = cost;
  // Two limits, so that the combined grant must satisfy both like the single ones.
  request.limits = {{{10, k_second}, 10}, {{25, 10 * k_second}, 25}};
  return request;
}

core::Request try_of(std::int64_t cost) {
  core::Request request;
  request.cost = cost;
  return request;
}

} // namespace

TEST_CASE("cli::instant_grants_combine: n grants at one instant equal one grant of n times "
          "the cost") {
  for (Algorithm algorithm : core::k_all_algorithms) {
    if (!cli::instant_grants_combine(algorithm)) {
      continue;
    }
    CAPTURE(core::algorithm_name(algorithm));
    for (std::int64_t cost : {1, 2}) {
      CAPTURE(cost);
      cli::LimitedRequest request = request_for(algorithm, cost);
      Nanos now = 1'000 * k_second + 300'000'000;
      cli::LocalGate one_by_one(request, [&] { return now; });
      cli::LocalGate together(request, [&] { return now; });
      // A history first, so that the windows and buckets are partly used.
      for (int i = 0; i < 3; ++i) {
        CHECK(one_by_one.decide(try_of(cost)).allowed);
        CHECK(together.decide(try_of(cost)).allowed);
        now += 150'000'000;
      }
      core::Decision first = one_by_one.decide(try_of(cost));
      REQUIRE(first.allowed);
      REQUIRE(together.decide(try_of(cost)).allowed);
      std::int64_t more = first.remaining / cost;
      REQUIRE(more > 0);
      for (std::int64_t i = 0; i < more; ++i) {
        CHECK(one_by_one.decide(try_of(cost)).allowed);
      }
      CHECK_FALSE(one_by_one.decide(try_of(cost)).allowed);
      CHECK(together.decide(try_of(more * cost)).allowed);
      CHECK_FALSE(together.decide(try_of(cost)).allowed);
      // From then on both keys answer alike.
      for (int step = 0; step < 40; ++step) {
        now += 97'000'000;
        core::Decision a = one_by_one.decide(try_of(cost));
        core::Decision b = together.decide(try_of(cost));
        CHECK(a.allowed == b.allowed);
        CHECK(a.remaining == b.remaining);
        CHECK(a.reset_after == b.reset_after);
      }
    }
  }
}

TEST_CASE("cli::instant_grants_combine is false for the leaky bucket, which spaces grants") {
  CHECK_FALSE(cli::instant_grants_combine(Algorithm::leaky_bucket));
  cli::LimitedRequest request = request_for(Algorithm::leaky_bucket, 1);
  Nanos now = 1'000 * k_second;
  cli::LocalGate gate(request, [&] { return now; });
  core::Decision first = gate.decide(try_of(1));
  REQUIRE(first.allowed);
  // Room in the queue, yet the next record must wait its interval.
  CHECK(first.remaining > 0);
  CHECK_FALSE(gate.decide(try_of(1)).allowed);
}

TEST_CASE("cli::LocalGate reserves on its own clock and gives a reservation back") {
  cli::LimitedRequest request;
  request.algorithm = core::Algorithm::token_bucket;
  request.limits = {{{2, k_second}, 2}};
  Nanos now = 50 * k_second;
  cli::LocalGate gate(request, [&] { return now; });
  core::Request reserve;
  reserve.reserve = true;
  CHECK(gate.decide(reserve).wait == 0);
  CHECK(gate.decide(reserve).wait == 0);
  core::Decision third = gate.decide(reserve);
  CHECK(third.allowed);
  CHECK(third.wait == k_second / 2);
  gate.give_back(third.grant);
  CHECK(gate.decide(reserve).wait == k_second / 2);
}
