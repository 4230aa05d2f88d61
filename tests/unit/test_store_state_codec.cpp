#include "store/sqlite/state_codec.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using namespace ratelimit::core::testing;

namespace {

core::LimitState state_of(core::Limit limit, std::int64_t first) {
  return {limit, {first, first + 1, 0}};
}

} // namespace

TEST_CASE("store::sqlite::encode_limits keeps the remembered limits apart, after the others") {
  std::vector<core::LimitState> limits{state_of(limit_of(10, k_s), 7)};
  std::vector<core::LimitState> remembered{state_of(limit_of(1, k_min), 9),
                                           state_of(limit_of(3, k_s, 5), 11)};
  std::string bytes = store::sqlite::encode_limits(limits, remembered);
  CHECK(bytes.size() == 3 * 48);
  auto decoded = store::sqlite::decode_limits(bytes);
  REQUIRE(decoded.has_value());
  CHECK(decoded->limits == limits);
  CHECK(decoded->remembered == remembered);
}

TEST_CASE("store::sqlite::decode_limits reads a schema-3 encoding as limits with none remembered") {
  std::vector<core::LimitState> limits{state_of(limit_of(10, k_s), 7),
                                       state_of(limit_of(1, k_min), 9)};
  auto decoded = store::sqlite::decode_limits(store::sqlite::encode_limits(limits));
  REQUIRE(decoded.has_value());
  CHECK(decoded->limits == limits);
  CHECK(decoded->remembered.empty());
}

TEST_CASE("store::sqlite::decode_limits refuses a named limit after a remembered one") {
  std::string remembered = store::sqlite::encode_limits({}, {state_of(limit_of(1, k_min), 9)});
  std::string named = store::sqlite::encode_limits({state_of(limit_of(10, k_s), 7)});
  CHECK_FALSE(store::sqlite::decode_limits(remembered + named).has_value());
  CHECK(store::sqlite::decode_limits(named + remembered).has_value());
}

TEST_CASE("store::sqlite::encode_limits puts what a window key granted before its limits") {
  std::vector<core::LimitState> limits{state_of(limit_of(10, k_s), 7)};
  std::vector<core::LimitState> remembered{state_of(limit_of(1, k_min), 9)};
  std::string bytes = store::sqlite::encode_limits(limits, remembered, 12);
  CHECK(bytes.size() == 8 + 2 * 48);
  auto decoded = store::sqlite::decode_limits(bytes);
  REQUIRE(decoded.has_value());
  CHECK(decoded->granted == 12);
  CHECK(decoded->limits == limits);
  CHECK(decoded->remembered == remembered);
  // Schema 4 and the other algorithms: none.
  CHECK_FALSE(
      store::sqlite::decode_limits(store::sqlite::encode_limits(limits))->granted.has_value());
  CHECK_FALSE(store::sqlite::decode_limits(bytes.substr(1)).has_value());
}

TEST_CASE(
    "store::sqlite::encode_limits of a key's state keeps what it granted for the windows only") {
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    CAPTURE(core::algorithm_name(algorithm));
    core::KeyState state{algorithm, 0, {state_of(limit_of(10, k_s), 7)}};
    state.granted = 3;
    bool window =
        algorithm == core::Algorithm::fixed_window || algorithm == core::Algorithm::sliding_window;
    auto decoded = store::sqlite::decode_limits(store::sqlite::encode_limits(state));
    REQUIRE(decoded.has_value());
    CHECK(decoded->granted == (window ? std::optional<std::int64_t>(3) : std::nullopt));
  }
}
