#include "store/store.hpp"

#include <fmt/format.h>

namespace ratelimit::store {

std::string key_conflict_message(std::string_view key, core::Algorithm stored,
                                 core::Algorithm requested) {
  return fmt::format("key \"{}\" is limited by {}, not {}; use -a {}, or forget the key with "
                     "`ratelimit reset {}`",
                     key, core::algorithm_name(stored), core::algorithm_name(requested),
                     core::algorithm_name(stored), key);
}

} // namespace ratelimit::store
