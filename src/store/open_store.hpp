#pragma once

#include "core/time.hpp"
#include "store/creation.hpp"
#include "store/store_url.hpp"

#include <memory>
#include <string>
#include <variant>

namespace ratelimit::store {

class Store;

// The SQLite database to open: a path given, or the default one, in a directory of ours.
struct DatabaseLocation {
  std::string path;
  // For the default path: the state directory of ours it is in, and the home directory
  // that directory is in when not $XDG_STATE_HOME's (it is never created).
  std::string state_directory;
  std::string home;
};

// Where the store is, once the command line, the environment and the configuration have
// named it: a SQLite database, or a Redis server with its password and TLS files.
using StoreTarget = std::variant<DatabaseLocation, RedisLocation>;

// How to open a store: each kind takes its own.
struct StoreSettings {
  std::string redis_prefix;     // Redis: the prefix of the key names
  core::Nanos timeout = 0;      // Redis: the longest wait to connect and for each reply
  core::Nanos lock_timeout = 0; // SQLite: the longest wait for the writers' lock
  Creation creation = Creation::if_missing;
};

// Opens the store at `target`. A missing SQLite database is created when `settings.creation`
// allows it, the default one in a directory of mode 0700 (never in a missing home
// directory); when it does not, the store is null. Throws StoreError.
std::unique_ptr<Store> open_store(const StoreTarget& target, const StoreSettings& settings);

} // namespace ratelimit::store
