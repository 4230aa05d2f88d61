#include "sim/profiles.hpp"
#include "sim/random.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using core::k_nanos_per_milli;
using core::k_nanos_per_second;

namespace {

sim::ProfileSpec spec(sim::Profile profile, core::Nanos duration, sim::Load load = {1, 1},
                      std::uint64_t seed = 1) {
  return {profile, core::Rate{10, k_nanos_per_second}, duration, load, seed};
}

std::vector<sim::Arrival> arrivals(const sim::ProfileSpec& profile_spec) {
  auto generated = sim::generate(profile_spec);
  REQUIRE(generated.ok());
  return *generated;
}

} // namespace

TEST_CASE("sim::SplitMix64 gives the reference sequence") {
  // The published sequence for seed 1234567.
  sim::SplitMix64 random(1234567);
  CHECK(random.next() == 6457827717110365317ULL);
  CHECK(random.next() == 3203168211198807973ULL);
  CHECK(random.next() == 9817491932198370423ULL);
  CHECK(random.next() == 4593380528125082431ULL);
  CHECK(random.next() == 16408922859458223821ULL);
}

TEST_CASE("sim::generate steady spaces arrivals evenly at load x rate") {
  auto steady = arrivals(spec(sim::Profile::steady, k_nanos_per_second));
  REQUIRE(steady.size() == 10);
  for (std::size_t i = 0; i < steady.size(); ++i) {
    CHECK(steady[i].at == static_cast<core::Nanos>(i) * 100 * k_nanos_per_milli);
    CHECK(steady[i].cost == 1);
  }
  auto faster = arrivals(spec(sim::Profile::steady, k_nanos_per_second, {25, 10}));
  REQUIRE(faster.size() == 25);
  CHECK(faster[1].at == 40 * k_nanos_per_milli);
  CHECK(faster[24].at == 960 * k_nanos_per_milli);
}

TEST_CASE("sim::generate burst is quiet, then 2 x load x N in a tenth of a period") {
  auto burst = arrivals(spec(sim::Profile::burst, 4 * k_nanos_per_second));
  REQUIRE(burst.size() == 40);
  CHECK(burst.front().at == 1900 * k_nanos_per_milli);
  CHECK(burst[19].at < 2 * k_nanos_per_second);
  CHECK(burst[20].at == 3900 * k_nanos_per_milli);
  CHECK(burst.back().at < 4 * k_nanos_per_second);
}

TEST_CASE("sim::generate boundary puts N just before a window boundary and N just after") {
  auto boundary = arrivals(spec(sim::Profile::boundary, 2 * k_nanos_per_second));
  REQUIRE(boundary.size() == 20);
  CHECK(boundary.front().at == 900 * k_nanos_per_milli);
  CHECK(boundary[9].at == 990 * k_nanos_per_milli);
  CHECK(boundary[10].at == k_nanos_per_second);
  CHECK(boundary.back().at == 1090 * k_nanos_per_milli);
  // The default ten periods repeat the pattern at 1s, 3s, 5s, 7s and 9s.
  CHECK(arrivals(spec(sim::Profile::boundary, 10 * k_nanos_per_second)).size() == 100);
}

TEST_CASE("sim::generate poisson is deterministic per seed") {
  auto first = arrivals(spec(sim::Profile::poisson, 100 * k_nanos_per_second, {1, 1}, 42));
  auto again = arrivals(spec(sim::Profile::poisson, 100 * k_nanos_per_second, {1, 1}, 42));
  auto other = arrivals(spec(sim::Profile::poisson, 100 * k_nanos_per_second, {1, 1}, 43));
  CHECK(first == again);
  CHECK(first != other);
  // About load x N per period: 1000 expected, a standard deviation of about 32.
  CHECK(first.size() > 850);
  CHECK(first.size() < 1150);
  for (std::size_t i = 1; i < first.size(); ++i) {
    REQUIRE(first[i].at >= first[i - 1].at);
  }
  CHECK(first.back().at < 100 * k_nanos_per_second);
}

TEST_CASE("sim::generate refuses a profile with no arrival or too many") {
  auto empty = sim::generate(spec(sim::Profile::burst, k_nanos_per_second));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().find("no arrival") != std::string::npos);
  auto huge = sim::generate({sim::Profile::steady,
                             core::Rate{1'000'000, k_nanos_per_second},
                             3600 * k_nanos_per_second,
                             {1, 1},
                             1});
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().find("more than 10000000 arrivals") != std::string::npos);
}

TEST_CASE("sim::parse_profile and sim::parse_load") {
  CHECK(*sim::parse_profile("poisson") == sim::Profile::poisson);
  CHECK(sim::parse_profile("bursty").error() ==
        "unknown profile \"bursty\"; expected steady, burst, boundary or poisson");
  auto load = sim::parse_load("2.25");
  REQUIRE(load.ok());
  CHECK(load->numerator * 100 == 225 * load->denominator);
  CHECK(sim::parse_load("1000").ok());
  for (const char* bad : {"", "0", "0.0", "-1", "1001", "1.0000001", "x", "1.2.3", "1e3"}) {
    CAPTURE(bad);
    CHECK_FALSE(sim::parse_load(bad).ok());
  }
}
