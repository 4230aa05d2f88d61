#pragma once

#include "core/limit.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::store {

// The limits of a key and their states as bytes: per limit six little-endian int64
// (count, period, burst, and the algorithm's three slots).
std::string encode_limits(const std::vector<core::LimitState>& limits);

// The inverse of `encode_limits`; nothing when `bytes` is not such an encoding.
std::optional<std::vector<core::LimitState>> decode_limits(std::string_view bytes);

} // namespace ratelimit::store
