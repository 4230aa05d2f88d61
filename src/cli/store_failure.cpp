#include "cli/store_failure.hpp"

#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <fmt/format.h>

namespace ratelimit::cli {

namespace {

// `message` on one line: a warning must not forge a second one.
std::string one_line(std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return message;
}

bool is_outage(const store::StoreError& error) {
  return dynamic_cast<const store::StoreUnavailable*>(&error) != nullptr;
}

} // namespace

bool falls_back_locally(const GlobalOptions& global, const store::StoreError& error) {
  // The outage first: the setting may read the configuration, which a working store skips.
  return is_outage(error) && on_store_error(global) == OnStoreError::local;
}

std::string local_fallback_warning(std::string_view error, std::string_view database) {
  return fmt::format("ratelimit: warning: {}; deciding on the local database \"{}\" instead: "
                     "the limit is kept on this host only (--on-store-error=local)\n",
                     one_line(std::string(error)), one_line(std::string(database)));
}

std::unique_ptr<store::Store> fall_back_locally(const GlobalOptions& global,
                                                const store::StoreError& error) {
  if (global.local_fallback.empty()) {
    global.local_fallback = one_line(error.what());
    util::write_stderr(local_fallback_warning(error.what(), database_path(global)));
  }
  return open_local_store(global);
}

bool fail_open(const GlobalOptions& global, const store::StoreError& error) {
  OnStoreError mode = on_store_error(global);
  if (mode == OnStoreError::deny || (mode == OnStoreError::local && !is_outage(error))) {
    return false;
  }
  util::write_stderr(fmt::format("ratelimit: warning: {}; going on without the store "
                                 "(--on-store-error={})\n",
                                 one_line(error.what()),
                                 mode == OnStoreError::allow ? "allow" : "local"));
  return true;
}

std::unique_ptr<store::Store>
open_store_or_fall_back(const GlobalOptions& global, std::string& failure,
                        const std::function<void(store::Store&)>& first_use) {
  std::unique_ptr<store::Store> store;
  try {
    store = open_store(global);
    if (first_use) {
      first_use(*store);
    }
    return store;
  } catch (const store::StoreError& error) {
    store.reset();
    if (falls_back_locally(global, error)) {
      store = fall_back_locally(global, error);
      if (first_use) {
        first_use(*store);
      }
      return store;
    }
    if (!fail_open(global, error)) {
      throw;
    }
    failure = error.what();
  }
  return store;
}

std::string pause_unchecked_warning(std::string_view key, std::string_view error) {
  return fmt::format("ratelimit: warning: cannot check {} for a pause: {}; going ahead in the "
                     "slot the store granted\n",
                     util::printable_key(key), one_line(std::string(error)));
}

} // namespace ratelimit::cli
