#include "cli/store_failure.hpp"

#include "util/key_text.hpp"

#include <fmt/format.h>

namespace ratelimit::cli {

namespace {

bool is_outage(const store::StoreError& error) {
  return dynamic_cast<const store::StoreUnavailable*>(&error) != nullptr;
}

} // namespace

std::string one_line_message(std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return message;
}

bool falls_back_locally(OnStoreError on_error, const store::StoreError& error) {
  return on_error == OnStoreError::local && is_outage(error);
}

bool goes_on_without_store(OnStoreError on_error, const store::StoreError& error) {
  return on_error == OnStoreError::allow || falls_back_locally(on_error, error);
}

std::string local_fallback_warning(std::string_view error, std::string_view database) {
  return fmt::format("ratelimit: warning: {}; deciding on the local database \"{}\" instead: "
                     "the limit is kept on this host only (--on-store-error=local)\n",
                     one_line_message(std::string(error)), one_line_message(std::string(database)));
}

std::string without_store_warning(OnStoreError on_error, std::string_view error) {
  return fmt::format("ratelimit: warning: {}; going on without the store "
                     "(--on-store-error={})\n",
                     one_line_message(std::string(error)),
                     on_error == OnStoreError::allow ? "allow" : "local");
}

std::string pause_unchecked_warning(std::string_view key, std::string_view error) {
  return fmt::format("ratelimit: warning: cannot check {} for a pause: {}; going ahead in the "
                     "slot the store granted\n",
                     util::printable_key(key), one_line_message(std::string(error)));
}

} // namespace ratelimit::cli
