#include "cli/global_options.hpp"

#include "cli/usage_error.hpp"
#include "core/rate.hpp"
#include "store/redis_store.hpp"
#include "store/sqlite_store.hpp"
#include "store/store_url.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>

namespace ratelimit::cli {

void add_global_options(CLI::App& app, GlobalOptions& options) {
  app.add_option("--db", options.db, "SQLite database shared by all invocations")
      ->option_text("PATH");
  app.add_flag("--json", options.json, "Print one JSON object per decision on stdout");
  app.add_flag("-q,--quiet", options.quiet, "Print nothing on a denial");
  app.add_option("--on-store-error", options.on_store_error,
                 "When the store fails: deny (default; exit 3) or allow (grant, with a "
                 "warning on stderr)")
      ->option_text("deny|allow")
      ->check(CLI::Validator(
          [](const std::string& value) {
            return value == "deny" || value == "allow"
                       ? std::string()
                       : "invalid value \"" + value.substr(0, 64) + "\": expected deny or allow";
          },
          "deny|allow"));
  app.add_option("-E,--limited-exit-code", options.limited_exit_code,
                 "Exit status when limited (default 1)")
      ->option_text("N")
      ->check(CLI::Range(0, 255));
  app.add_option("--lock-timeout", options.lock_timeout,
                 "Longest wait for the database lock before failing with status 3 "
                 "(default 10s)")
      ->option_text("DURATION");
  app.add_option("--store", options.store,
                 "Where keys live: redis://[[user]:password@]host[:port][/db] or sqlite:PATH "
                 "(default $RATELIMIT_STORE, else the SQLite database)")
      ->option_text("URL");
  app.add_option("--redis-prefix", options.redis_prefix,
                 "Prefix of the Redis key names (default ratelimit:)")
      ->option_text("PREFIX");
  app.add_option("--store-timeout", options.store_timeout,
                 "Longest wait to connect to Redis and for each reply before failing with "
                 "status 3 (default 1s)")
      ->option_text("DURATION");
}

std::string database_path(const GlobalOptions& options) {
  if (!options.db.empty()) {
    return options.db;
  }
  if (const char* env = std::getenv("RATELIMIT_DB"); env && *env) {
    return env;
  }
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state == '/') {
    return std::string(state) + "/ratelimit/ratelimit.db";
  }
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    throw UsageError("cannot find the database: HOME is not set; give --db PATH or set "
                     "RATELIMIT_DB");
  }
  return std::string(home) + "/.local/state/ratelimit/ratelimit.db";
}

std::unique_ptr<store::Store> open_store(const GlobalOptions& options) {
  if (!options.store.empty() && !options.db.empty()) {
    throw UsageError("--db and --store both name a store; give one of them");
  }
  auto store_timeout = core::parse_duration(options.store_timeout);
  if (!store_timeout) {
    throw UsageError("--store-timeout: " + store_timeout.error());
  }
  if (*store_timeout <= 0) {
    throw UsageError("--store-timeout: expected a duration above 0, e.g. 1s, 500ms");
  }
  std::string url = options.store;
  if (const char* env = std::getenv("RATELIMIT_STORE");
      url.empty() && options.db.empty() && env && *env) {
    url = env;
  }
  std::string path;
  if (!url.empty()) {
    auto location = store::parse_store_url(url);
    if (!location) {
      throw UsageError(location.error());
    }
    if (const auto* redis = std::get_if<store::RedisLocation>(&*location)) {
      return std::make_unique<store::RedisStore>(*redis, options.redis_prefix, *store_timeout);
    }
    path = std::get<store::SqliteLocation>(*location).path;
  } else {
    path = database_path(options);
  }
  auto lock_timeout = core::parse_duration(options.lock_timeout);
  if (!lock_timeout) {
    throw UsageError("--lock-timeout: " + lock_timeout.error());
  }
  return std::make_unique<store::SqliteStore>(path, *lock_timeout);
}

} // namespace ratelimit::cli
