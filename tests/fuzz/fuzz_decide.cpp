// core::inspect and core::decide on any state that the stores would read back (a damaged
// or hand-edited row that passed core::within_bounds): no undefined behaviour (the fuzz
// build runs UBSan), decisions that make sense, and a state after a grant that the stores
// can read again.
//
// Input: algorithm (1 byte), flags (1 byte: bit 0 a reservation), the key's clock, the
// request's now, cost and max_wait (8 bytes each, little-endian), then the limits as
// store::sqlite::encode_limits writes them.
#include "core/bounds.hpp"
#include "core/decide.hpp"
#include "fuzz_check.hpp"
#include "store/sqlite/state_codec.hpp"

#include <cstdint>
#include <iterator>

using namespace ratelimit;

namespace {

constexpr std::size_t k_header = 2 + 4 * 8;

std::int64_t read_int64(std::string_view bytes, std::size_t offset) {
  std::uint64_t bits = 0;
  for (int i = 7; i >= 0; --i) {
    bits = (bits << 8) | static_cast<unsigned char>(bytes[offset + static_cast<std::size_t>(i)]);
  }
  return static_cast<std::int64_t>(bits);
}

// Checks what any decision, granted or not, must satisfy.
void check_standing(const core::Decision& decision, std::size_t limits, std::string_view bytes) {
  fuzz::check(decision.wait >= 0, "wait >= 0", bytes);
  fuzz::check(decision.remaining >= 0, "remaining >= 0", bytes);
  fuzz::check(decision.reset_after >= 0, "reset_after >= 0", bytes);
  fuzz::check(decision.binding < limits, "binding names a limit", bytes);
  fuzz::check(decision.limits.size() == limits, "one report per limit", bytes);
  fuzz::check(decision.allowed == (decision.refusal == core::Refusal::none),
              "allowed exactly when nothing refused", bytes);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes = fuzz::as_text(data, size);
  if (bytes.size() < k_header) {
    return 0;
  }
  auto stored = store::sqlite::decode_limits(bytes.substr(k_header));
  if (!stored || stored->limits.empty()) {
    return 0;
  }
  core::KeyState state{core::k_all_algorithms[static_cast<unsigned char>(bytes[0]) %
                                              std::size(core::k_all_algorithms)],
                       read_int64(bytes, 2), std::move(stored->limits)};
  state.remembered = std::move(stored->remembered);
  state.granted = stored->granted.value_or(0);
  core::Request request;
  request.reserve = (bytes[1] & 1) != 0;
  request.now = read_int64(bytes, 10);
  request.cost = read_int64(bytes, 18);
  request.max_wait = read_int64(bytes, 26);
  // The stores refuse anything else: a row out of bounds is damaged, a clock past the
  // latest time decides nothing.
  if (!core::within_bounds(state) || request.now < core::k_min_time ||
      request.now > core::k_max_time || request.max_wait < 0) {
    return 0;
  }

  core::MemoryGrantLog log;
  core::Decision standing = core::inspect(state, log, request.now);
  check_standing(standing, state.limits.size(), bytes);
  fuzz::check(standing.allowed == (standing.wait == 0), "inspect: allowed when no wait", bytes);

  std::vector<core::Limit> asked;
  for (const core::LimitState& limit : state.limits) {
    asked.push_back(limit.limit);
  }
  if (core::check_limits(state.algorithm, asked, request.cost, false)) {
    return 0;
  }
  core::KeyState before = state;
  core::Decision decision = core::decide(state, asked, log, request);
  check_standing(decision, asked.size(), bytes);
  fuzz::check(decision.now >= request.now && decision.now >= before.clock,
              "the key's clock never runs back", bytes);
  fuzz::check(state.clock == decision.now, "the state keeps the decision's clock", bytes);
  if (!decision.allowed) {
    fuzz::check(state.limits == before.limits, "a refusal changes nothing but the clock", bytes);
    return 0;
  }
  fuzz::check(request.reserve || decision.wait == 0, "try: granted only now", bytes);
  fuzz::check(!request.reserve || decision.wait <= request.max_wait,
              "wait: granted within max_wait", bytes);
  fuzz::check(decision.grant.at == decision.now + decision.wait, "the grant is at the slot", bytes);
  fuzz::check(decision.grant.at <= core::k_max_time, "the slot is within the latest time", bytes);
  fuzz::check(core::within_bounds(state), "what a grant stores reads back", bytes);
  check_standing(core::inspect(state, log, decision.now), state.limits.size(), bytes);
  return 0;
}
