#pragma once

#include "core/limit.hpp"
#include "core/server_budget.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::store::sqlite {

// The limits of a key and their states.
struct StoredLimits {
  std::vector<core::LimitState> limits;     // KeyState::limits
  std::vector<core::LimitState> remembered; // KeyState::remembered
  // KeyState::granted, kept for the windows; nothing in an encoding without it
  // (another algorithm's, or one written before schema version 5).
  std::optional<std::int64_t> granted;
  bool operator==(const StoredLimits&) const = default;
};

// As bytes: `granted` when given, a little-endian int64; then per limit six
// little-endian int64 (count, period, burst, and the algorithm's three slots), those of
// `limits` then those of `remembered`, with their count negated (an encoding without
// either is the one of schema version 3).
std::string encode_limits(const std::vector<core::LimitState>& limits,
                          const std::vector<core::LimitState>& remembered = {},
                          std::optional<std::int64_t> granted = std::nullopt);

// The encoding of `state`'s limits, with what it has granted when its algorithm counts it
// (core::Rules::counts_granted).
std::string encode_limits(const core::KeyState& state);

// The inverse of `encode_limits`; nothing when `bytes` is not such an encoding, or one
// `encode_limits` would not write.
std::optional<StoredLimits> decode_limits(std::string_view bytes);

// What a key keeps of its servers' word (the `server` column, schema version 7), as bytes:
// little-endian int64 throughout, its grant sequence; then, unless it holds none of them,
// when its latest answer came and that answer's latency, the count of ceilings then each (ceiling,
// reset), the count of awaited answers then each (seq, cost, at, until), the count of policies then
// each (quota, window, the length of its field, its bytes padded to 8, the length of its name, its
// bytes padded to 8); then for a key that learns an adaptive rate (schema version 8) its six
// integers (max_rate, cut_at, successes, measured_from, clock, next_slot). Empty for a key that has
// granted nothing and holds none of them: the column is then NULL.
std::string encode_server_word(const core::ServerWord& word);

// The inverse of `encode_server_word`; nothing when `bytes` is not such an encoding or holds
// more than the core's bounds.
std::optional<core::ServerWord> decode_server_word(std::string_view bytes);

} // namespace ratelimit::store::sqlite
