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
  core::ServerWord server;                  // KeyState::server
  bool operator==(const StoredLimits&) const = default;
};

// As bytes: per limit six little-endian int64 (count, period, burst, and the algorithm's
// three slots), those of `limits` then those of `remembered`, with their count negated
// (an encoding without remembered limits is the one of schema version 3); then, unless the
// key has made no grant and holds no server word, an int64 0 (no limit has a count of 0),
// its grant sequence, and `encode_server_word` of the rest (schema version 5). Stored with
// the limits, which every grant writes anyway, so that a decision reads and writes no more
// columns than before.
std::string encode_limits(const std::vector<core::LimitState>& limits,
                          const std::vector<core::LimitState>& remembered = {},
                          const core::ServerWord& server = {});

// The inverse of `encode_limits`; nothing when `bytes` is not such an encoding, or one
// `encode_limits` would not write.
std::optional<StoredLimits> decode_limits(std::string_view bytes);

// What a key keeps of its servers' word besides its grant sequence, as bytes (the end of
// `encode_limits`): little-endian int64 throughout, the count of ceilings
// then each (ceiling, reset), the count of awaited answers then each (seq, cost, at,
// until), the
// count of policies then each (quota, window, the length of its field, its bytes padded to
// 8, the length of its name, its bytes padded to 8). Empty when the key holds none of them.
std::string encode_server_word(const core::ServerWord& word);

// The inverse of `encode_server_word` (`grant_seq` left 0); nothing when `bytes` is not such
// an encoding or holds more than the core's bounds.
std::optional<core::ServerWord> decode_server_word(std::string_view bytes);

} // namespace ratelimit::store
