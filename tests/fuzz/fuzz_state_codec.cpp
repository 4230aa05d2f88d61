// store::sqlite::decode_limits on any bytes (a damaged database): it never crashes, what it accepts
// is a valid state, and encoding a decoded state gives back the same bytes.
#include "fuzz_check.hpp"
#include "store/sqlite/state_codec.hpp"

#include <cstdint>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes = fuzz::as_text(data, size);
  auto stored = store::sqlite::decode_limits(bytes);
  if (!stored) {
    return 0;
  }
  std::vector<core::LimitState> every = stored->limits;
  every.insert(every.end(), stored->remembered.begin(), stored->remembered.end());
  for (const core::LimitState& state : every) {
    fuzz::check(state.limit.rate.count >= 1 && state.limit.rate.count <= core::k_max_count &&
                    state.limit.rate.period >= state.limit.rate.count &&
                    state.limit.rate.period <= core::k_max_duration && state.limit.burst >= 1,
                "a decoded limit is one parse_rate can give", bytes);
  }
  std::string encoded =
      store::sqlite::encode_limits(stored->limits, stored->remembered, stored->granted);
  fuzz::check(encoded == bytes, "encode(decode(x)) == x", bytes);
  auto again = store::sqlite::decode_limits(encoded);
  fuzz::check(again.has_value() && *again == *stored, "decode(encode(y)) == y", bytes);
  return 0;
}
