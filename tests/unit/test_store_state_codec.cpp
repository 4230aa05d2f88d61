#include "store/state_codec.hpp"

#include "core_test_key.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using namespace ratelimit::core::testing;

namespace {

core::LimitState state_of(core::Limit limit, std::int64_t first) {
  return {limit, {first, first + 1, 0}};
}

} // namespace

TEST_CASE("store::encode_limits keeps the remembered limits apart, after the others") {
  std::vector<core::LimitState> limits{state_of(limit_of(10, k_s), 7)};
  std::vector<core::LimitState> remembered{state_of(limit_of(1, k_min), 9),
                                           state_of(limit_of(3, k_s, 5), 11)};
  std::string bytes = store::encode_limits(limits, remembered);
  CHECK(bytes.size() == 3 * 48);
  auto decoded = store::decode_limits(bytes);
  REQUIRE(decoded.has_value());
  CHECK(decoded->limits == limits);
  CHECK(decoded->remembered == remembered);
}

TEST_CASE("store::decode_limits reads a schema-3 encoding as limits with none remembered") {
  std::vector<core::LimitState> limits{state_of(limit_of(10, k_s), 7),
                                       state_of(limit_of(1, k_min), 9)};
  auto decoded = store::decode_limits(store::encode_limits(limits));
  REQUIRE(decoded.has_value());
  CHECK(decoded->limits == limits);
  CHECK(decoded->remembered.empty());
}

TEST_CASE("store::decode_limits refuses a named limit after a remembered one") {
  std::string remembered = store::encode_limits({}, {state_of(limit_of(1, k_min), 9)});
  std::string named = store::encode_limits({state_of(limit_of(10, k_s), 7)});
  CHECK_FALSE(store::decode_limits(remembered + named).has_value());
  CHECK(store::decode_limits(named + remembered).has_value());
}
