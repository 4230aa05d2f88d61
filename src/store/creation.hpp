#pragma once

namespace ratelimit::store {

// Whether opening a database that does not exist creates it.
enum class Creation {
  if_missing, // the file, and its missing directories (as the umask says)
  never,      // a missing file is a StoreError
};

} // namespace ratelimit::store
