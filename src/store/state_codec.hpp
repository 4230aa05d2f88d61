#pragma once

#include "core/limit.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::store {

// The limits of a key and their states.
struct StoredLimits {
  std::vector<core::LimitState> limits;     // KeyState::limits
  std::vector<core::LimitState> remembered; // KeyState::remembered
  bool operator==(const StoredLimits&) const = default;
};

// As bytes: per limit six little-endian int64 (count, period, burst, and the algorithm's
// three slots), those of `limits` then those of `remembered`, with their count negated
// (an encoding without remembered limits is the one of schema version 3).
std::string encode_limits(const std::vector<core::LimitState>& limits,
                          const std::vector<core::LimitState>& remembered = {});

// The inverse of `encode_limits`; nothing when `bytes` is not such an encoding.
std::optional<StoredLimits> decode_limits(std::string_view bytes);

} // namespace ratelimit::store
