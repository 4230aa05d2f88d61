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

TEST_CASE("store::sqlite::encode_server_word keeps an adaptive rate after the server word") {
  core::ServerWord word;
  core::AdaptiveState adaptive;
  adaptive.max_rate = 4'600'000;
  adaptive.cut_at = k_t0;
  adaptive.successes = 3 * core::k_success_unit;
  adaptive.measured_from = k_t0;
  adaptive.clock = k_t0 + k_s;
  adaptive.next_slot = k_t0 + 1200 * k_ms;
  // A key that learns before it has granted anything (its first call refused) still keeps
  // what it learned.
  word.adaptive = adaptive;
  std::string bytes = store::sqlite::encode_server_word(word);
  CHECK(bytes.size() == 8 * (1 + 5 + 6));
  CHECK(store::sqlite::decode_server_word(bytes) == word);
  word.grant_seq = 12;
  word.policies.push_back({"ratelimit-policy", "default", 5, k_s});
  CHECK(store::sqlite::decode_server_word(store::sqlite::encode_server_word(word)) == word);
  // Without it, the encoding of schema version 7.
  core::ServerWord plain = word;
  plain.adaptive.reset();
  std::string seven = store::sqlite::encode_server_word(plain);
  CHECK(store::sqlite::encode_server_word(word).size() == seven.size() + 48);
  CHECK(store::sqlite::decode_server_word(seven) == plain);
  // Part of one, or one out of bounds, is not ours.
  std::string cut = store::sqlite::encode_server_word(word);
  CHECK_FALSE(store::sqlite::decode_server_word(cut.substr(0, cut.size() - 8)));
  word.adaptive->max_rate = -1;
  CHECK_FALSE(store::sqlite::decode_server_word(store::sqlite::encode_server_word(word)));
}
