#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ratelimit::util {

// The candidate closest to `word` by edit distance (insertions, deletions, substitutions),
// when it is close enough to be what was meant: at most 3 edits, and fewer than `word` has
// characters. Nothing otherwise. For error messages only: it is quadratic in the lengths.
std::optional<std::string> near_miss(std::string_view word,
                                     std::span<const std::string> candidates);

} // namespace ratelimit::util
