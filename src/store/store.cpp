#include "store/store.hpp"

#include "util/key_text.hpp"

#include <fmt/format.h>

namespace ratelimit::store {

std::string key_conflict_message(std::string_view key, core::Algorithm stored,
                                 core::Algorithm requested) {
  return fmt::format("key {} is limited by {}, not {}; use -a {} (or neither -a nor -b), or "
                     "forget the key with `ratelimit reset {}`",
                     util::printable_key(key), core::algorithm_name(stored),
                     core::algorithm_name(requested), core::algorithm_name(stored),
                     util::shell_word_for_key(key));
}

std::string clock_beyond_range_message(std::string_view store) {
  return fmt::format("{}: the clock is beyond the supported range (times up to "
                     "2116-02-20T23:53:38Z); check the system clock",
                     store);
}

} // namespace ratelimit::store
