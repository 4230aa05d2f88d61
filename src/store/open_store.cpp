#include "store/open_store.hpp"

#include "store/redis/redis_store.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/paths.hpp"

#include <cerrno>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ratelimit::store {

namespace {

// Makes the default database's directory: private (0700), as the XDG base directory
// specification asks, in parents made as the umask says; never the home directory.
void make_state_directory(const DatabaseLocation& location) {
  struct stat info {};
  if (!location.home.empty()) {
    const char* problem = nullptr;
    if (::stat(location.home.c_str(), &info) != 0) {
      problem = errno == ENOENT ? "it does not exist" : "it cannot be read";
    } else if (!S_ISDIR(info.st_mode)) {
      problem = "it is not a directory";
    }
    if (problem != nullptr) {
      throw StoreError(
          fmt::format("cannot create the database in the home directory \"{}\": {}; give --db "
                      "PATH or set RATELIMIT_DB",
                      location.home, problem));
    }
  }
  try {
    util::make_directories(location.state_directory, 0700);
  } catch (const std::runtime_error& error) {
    throw StoreError(fmt::format("cannot create database \"{}\": {}", location.path, error.what()));
  }
}

bool database_missing(const std::string& path) {
  return ::access(path.c_str(), F_OK) != 0 && errno == ENOENT;
}

} // namespace

std::unique_ptr<Store> open_store(const StoreTarget& target, const StoreSettings& settings) {
  if (const auto* redis = std::get_if<RedisLocation>(&target)) {
    return std::make_unique<redis::RedisStore>(*redis, settings.redis_prefix, settings.timeout);
  }
  const auto& database = std::get<DatabaseLocation>(target);
  // Only when the database is missing: a decision on an existing one pays one access(2).
  if (!database.state_directory.empty() && settings.creation == Creation::if_missing &&
      database_missing(database.path)) {
    make_state_directory(database);
  }
  if (settings.creation == Creation::never && database_missing(database.path)) {
    return nullptr;
  }
  return std::make_unique<sqlite::SqliteStore>(database.path, settings.lock_timeout,
                                               settings.creation);
}

} // namespace ratelimit::store
