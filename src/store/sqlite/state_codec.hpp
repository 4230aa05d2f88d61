#pragma once

#include "core/limit.hpp"

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

// The inverse of `encode_limits`; nothing when `bytes` is not such an encoding.
std::optional<StoredLimits> decode_limits(std::string_view bytes);

} // namespace ratelimit::store::sqlite
