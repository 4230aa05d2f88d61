#include "util/near_miss.hpp"

#include <algorithm>
#include <vector>

namespace ratelimit::util {

namespace {

constexpr std::size_t k_max_edits = 3;
// A longer word is cut first: anything that long is no misspelling of a short name.
constexpr std::size_t k_longest_word = 64;

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::optional<std::string> near_miss(std::string_view word,
                                     std::span<const std::string> candidates) {
  word = word.substr(0, k_longest_word);
  const std::string* nearest = nullptr;
  std::size_t nearest_distance = 0;
  for (const std::string& candidate : candidates) {
    std::size_t distance = edit_distance(word, candidate);
    if (nearest == nullptr || distance < nearest_distance) {
      nearest = &candidate;
      nearest_distance = distance;
    }
  }
  if (nearest == nullptr || nearest_distance > k_max_edits || nearest_distance >= word.size()) {
    return std::nullopt;
  }
  return *nearest;
}

} // namespace ratelimit::util
