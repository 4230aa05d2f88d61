#include "cli/global_options.hpp"

#include "cli/usage_error.hpp"
#include "core/rate.hpp"
#include "store/open_store.hpp"
#include "store/redis_keys.hpp"
#include "store/store.hpp"
#include "store/store_url.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>
#include <string_view>
#include <utility>

namespace ratelimit::cli {

namespace {

// The headings under which --help lists the global options that are not about the output.
constexpr const char* k_store_group = "Store options";
constexpr const char* k_tls_group = "Redis TLS options";

} // namespace

void add_global_options(CLI::App& app, GlobalOptions& options) {
  app.add_option("--db", options.db, "SQLite database shared by all invocations")
      ->option_text("PATH")
      ->group(k_store_group)
      ->check(CLI::Validator(
          [](const std::string& value) {
            return value.empty() ? "an empty path names no file" : std::string();
          },
          "PATH"));
  app.add_flag("--json", options.json, "Print one JSON object per decision on stdout");
  app.add_flag("-q,--quiet", options.quiet, "Print nothing on a denial");
  app.add_option("--on-store-error", options.on_store_error,
                 "When the store fails: deny (exit 3), allow (grant, with a warning on stderr) "
                 "or local (Redis out of reach: decide on the --db database, with a warning; "
                 "each host then keeps the limit alone, so N hosts admit up to N + 1 times it, "
                 "counting slots Redis granted before); "
                 "default [store] on_error, else deny")
      ->option_text("deny|allow|local")
      ->group(k_store_group)
      ->check(CLI::Validator(
          [](const std::string& value) {
            return value == "deny" || value == "allow" || value == "local"
                       ? std::string()
                       : "invalid value \"" + value.substr(0, 64) +
                             "\": expected deny, allow or local";
          },
          "deny|allow|local"));
  app.add_option("-E,--limited-exit-code", options.limited_exit_code,
                 "Exit status when limited (default 1)")
      ->option_text("N")
      ->check(CLI::Range(0, 255));
  app.add_option("--lock-timeout", options.lock_timeout,
                 "Longest wait for the database lock before failing with status 3 "
                 "(default 10s)")
      ->option_text("DURATION")
      ->group(k_store_group);
  app.add_option("--config", options.config,
                 "Configuration file of named limits and the store (default "
                 "$RATELIMIT_CONFIG, else ~/.config/ratelimit/limits.toml and "
                 "/etc/ratelimit/limits.toml)")
      ->option_text("FILE");
  app.add_option("--store", options.store,
                 "Where keys live: a redis://, rediss://, redis-sentinel://, unix:// or sqlite: "
                 "URL, in a form listed below (default $RATELIMIT_STORE, else the SQLite "
                 "database)")
      ->option_text("URL")
      ->group(k_store_group);
  if (const char* prefix = std::getenv("RATELIMIT_REDIS_PREFIX"); prefix && *prefix) {
    options.redis_prefix = prefix;
  }
  app.add_option("--redis-prefix", options.redis_prefix,
                 "Prefix of the Redis key names (default $RATELIMIT_REDIS_PREFIX, else "
                 "ratelimit:)")
      ->option_text("PREFIX")
      ->group(k_store_group);
  app.add_option("--store-timeout", options.store_timeout,
                 "Longest wait to connect to Redis and for each reply before failing with "
                 "status 3 (default [store] timeout, else 1s)")
      ->option_text("DURATION")
      ->group(k_store_group);
  app.add_option("--store-ca", options.store_ca,
                 "CA certificate (PEM) that the rediss:// server's certificate must verify "
                 "against, instead of the system's (default $RATELIMIT_STORE_CA, else [store] "
                 "ca)")
      ->option_text("FILE")
      ->group(k_tls_group);
  app.add_option("--store-cert", options.store_cert,
                 "Client certificate (PEM) for a rediss:// server that demands one (default "
                 "$RATELIMIT_STORE_CERT, else [store] cert)")
      ->option_text("FILE")
      ->group(k_tls_group);
  app.add_option("--store-key", options.store_key,
                 "Private key (PEM) of --store-cert, if not in its file (default "
                 "$RATELIMIT_STORE_KEY, else [store] key)")
      ->option_text("FILE")
      ->group(k_tls_group);
}

namespace {

// Our state directory, $XDG_STATE_HOME/ratelimit, else ~/.local/state/ratelimit, with the
// home directory it is in in the second case; nullopt when HOME is not set.
std::optional<std::pair<std::string, std::string>> state_directory() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state == '/') {
    return std::pair{std::string(state) + "/ratelimit", std::string()};
  }
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    return std::nullopt;
  }
  return std::pair{std::string(home) + "/.local/state/ratelimit", std::string(home)};
}

store::DatabaseLocation locate_database(const GlobalOptions& options) {
  if (!options.db.empty()) {
    return {options.db, "", ""};
  }
  if (const char* env = std::getenv("RATELIMIT_DB"); env && *env) {
    return {env, "", ""};
  }
  auto state = state_directory();
  if (!state) {
    throw UsageError("cannot find the database: HOME is not set; give --db PATH or set "
                     "RATELIMIT_DB");
  }
  auto [directory, home] = *state;
  return {directory + "/ratelimit.db", directory, home};
}

// Where TLS sessions are kept: tls-sessions/ in the state directory, unless
// RATELIMIT_TLS_SESSION_CACHE is off (or no directory is known).
void locate_session_cache(store::TlsFiles& files) {
  const char* setting = std::getenv("RATELIMIT_TLS_SESSION_CACHE");
  std::string_view value = setting ? setting : "";
  if (value == "off") {
    return;
  }
  if (!value.empty() && value != "on") {
    throw UsageError(fmt::format("invalid RATELIMIT_TLS_SESSION_CACHE \"{}\": expected "
                                 "on or off",
                                 value.substr(0, 64)));
  }
  if (auto state = state_directory()) {
    files.session_directory = state->first + "/tls-sessions";
    files.session_home = state->second;
  }
}

std::unique_ptr<store::Store> open_store_as(const GlobalOptions& options, store::Creation creation);

// How to open a SQLite database: the lock timeout, created when missing.
store::StoreSettings sqlite_settings(const GlobalOptions& options) {
  auto lock_timeout = core::parse_duration(options.lock_timeout);
  if (!lock_timeout) {
    throw UsageError("--lock-timeout: " + lock_timeout.error());
  }
  store::StoreSettings settings;
  settings.lock_timeout = *lock_timeout;
  return settings;
}

// Whether the command line or the environment names the store. Then no configuration file is
// read for the store: its [store] section describes the store it names.
bool store_named_outside_config(const GlobalOptions& options) {
  const char* store = std::getenv("RATELIMIT_STORE");
  const char* db = std::getenv("RATELIMIT_DB");
  return !options.store.empty() || !options.db.empty() || (store && *store) || (db && *db);
}

// A [store] setting of the configuration, unless the store is named outside it.
std::optional<std::string> config_store_setting(const GlobalOptions& options,
                                                std::optional<std::string> Config::*setting) {
  if (store_named_outside_config(options)) {
    return std::nullopt;
  }
  return configuration(options).*setting;
}

// The option's value, else the environment variable's.
std::string option_or_env(const std::string& value, const char* variable) {
  if (!value.empty()) {
    return value;
  }
  const char* env = std::getenv(variable);
  return env ? env : "";
}

// What a Redis location takes from outside the URL: the password from the environment, where
// `ps` does not show it (a password in the URL wins), and the TLS files.
void complete_redis_location(const GlobalOptions& options, store::RedisLocation& location) {
  if (location.password.empty()) {
    location.password = option_or_env("", "RATELIMIT_STORE_PASSWORD");
  }
  if (!location.user.empty() && location.password.empty()) {
    throw UsageError(fmt::format("the store URL names the user \"{}\" but no password: give it "
                                 "in RATELIMIT_STORE_PASSWORD or in the URL, {}",
                                 location.user.substr(0, 100), store::k_store_url_form));
  }
  if (!location.tls) {
    return;
  }
  location.tls_files = tls_files(options);
}

// Where a file of the configuration was given, for messages: `setting` and its line.
std::string given_in_config(const char* setting, const ConfigPath& path) {
  return fmt::format("[store] {} at {}", setting, path.defined_in);
}

} // namespace

OnStoreError on_store_error(const GlobalOptions& options) {
  // Both checked when given: the option by its validator, the file's setting when read.
  std::string value = !options.on_store_error.empty()
                          ? options.on_store_error
                          : config_store_setting(options, &Config::store_on_error).value_or("");
  if (value == "allow") {
    return OnStoreError::allow;
  }
  if (value == "local") {
    return OnStoreError::local;
  }
  return OnStoreError::deny;
}

store::TlsFiles tls_files(const GlobalOptions& options) {
  store::TlsFiles files;
  files.ca_file = option_or_env(options.store_ca, "RATELIMIT_STORE_CA");
  files.cert_file = option_or_env(options.store_cert, "RATELIMIT_STORE_CERT");
  files.key_file = option_or_env(options.store_key, "RATELIMIT_STORE_KEY");
  // Only read for a rediss:// store, and then the configuration is read already when it
  // named the store: no cost to any other.
  if ((files.ca_file.empty() || files.cert_file.empty()) && !store_named_outside_config(options)) {
    const Config& config = configuration(options);
    if (files.ca_file.empty() && config.store_ca) {
      files.ca_file = config.store_ca->path;
      files.ca_given_by = given_in_config("ca", *config.store_ca);
    }
    if (files.cert_file.empty() && config.store_cert) {
      files.cert_file = config.store_cert->path;
      files.cert_given_by = given_in_config("cert", *config.store_cert);
      if (files.key_file.empty() && config.store_key) {
        files.key_file = config.store_key->path;
        files.key_given_by = given_in_config("key", *config.store_key);
      }
    }
  }
  if (!files.key_file.empty() && files.cert_file.empty()) {
    throw UsageError("--store-key names the key of a client certificate, but no --store-cert "
                     "(or RATELIMIT_STORE_CERT) names the certificate");
  }
  locate_session_cache(files);
  return files;
}

core::Nanos store_timeout(const GlobalOptions& options) {
  if (options.store_timeout.empty()) {
    // Checked when the file was read.
    if (auto text = config_store_setting(options, &Config::store_timeout)) {
      return *core::parse_duration(*text);
    }
    return core::k_nanos_per_second;
  }
  auto timeout = core::parse_duration(options.store_timeout);
  if (!timeout) {
    throw UsageError("--store-timeout: " + timeout.error());
  }
  if (*timeout <= 0) {
    throw UsageError("--store-timeout: expected a duration above 0, e.g. 1s, 500ms");
  }
  return *timeout;
}

const Config& configuration(const GlobalOptions& options) {
  if (!options.loaded_config) {
    options.loaded_config = load_config(options.config);
  }
  return *options.loaded_config;
}

void export_store_environment(const GlobalOptions& options) {
  if (!options.store.empty() && !options.db.empty()) {
    // --on-store-error=local: the store, and the local database.
    ::setenv("RATELIMIT_STORE", options.store.c_str(), 1);
    ::setenv("RATELIMIT_DB", options.db.c_str(), 1);
  } else if (!options.store.empty()) {
    ::setenv("RATELIMIT_STORE", options.store.c_str(), 1);
    ::unsetenv("RATELIMIT_DB");
  } else if (!options.db.empty()) {
    ::setenv("RATELIMIT_DB", options.db.c_str(), 1);
    ::unsetenv("RATELIMIT_STORE");
  }
  if (!options.config.empty()) {
    ::setenv("RATELIMIT_CONFIG", options.config.c_str(), 1);
  }
  ::setenv("RATELIMIT_REDIS_PREFIX", options.redis_prefix.c_str(), 1);
  // The TLS files of the command line: a rediss:// store is not reached without them.
  for (const auto& [value, variable] : {std::pair{&options.store_ca, "RATELIMIT_STORE_CA"},
                                        std::pair{&options.store_cert, "RATELIMIT_STORE_CERT"},
                                        std::pair{&options.store_key, "RATELIMIT_STORE_KEY"}}) {
    if (!value->empty()) {
      ::setenv(variable, value->c_str(), 1);
    }
  }
}

std::string database_path(const GlobalOptions& options) {
  return locate_database(options).path;
}

std::unique_ptr<store::Store> open_store(const GlobalOptions& options) {
  return open_store_as(options, store::Creation::if_missing);
}

std::unique_ptr<store::Store> open_existing_store(const GlobalOptions& options) {
  return open_store_as(options, store::Creation::never);
}

std::unique_ptr<store::Store> open_local_store(const GlobalOptions& options) {
  return store::open_store(locate_database(options), sqlite_settings(options));
}

namespace {

std::unique_ptr<store::Store> open_store_as(const GlobalOptions& options,
                                            store::Creation creation) {
  // Under --on-store-error=local, --db names where decisions go when the store fails.
  if (!options.store.empty() && !options.db.empty() &&
      on_store_error(options) != OnStoreError::local) {
    throw UsageError("--db and --store both name a store; give one of them (or "
                     "--on-store-error=local, where --db names the local database)");
  }
  store::StoreSettings settings{options.redis_prefix, store_timeout(options), 0, creation};
  std::string url = options.store;
  if (const char* env = std::getenv("RATELIMIT_STORE");
      url.empty() && options.db.empty() && env && *env) {
    url = env;
  }
  if (const char* db = std::getenv("RATELIMIT_DB");
      url.empty() && options.db.empty() && !(db && *db)) {
    // Nothing said where on the command line or in the environment: the configuration may.
    url = configuration(options).store_url.value_or("");
  }
  std::string path;
  if (!url.empty()) {
    auto location = store::parse_store_url(url);
    if (!location) {
      throw UsageError(location.error());
    }
    if (const auto* parsed = std::get_if<store::RedisLocation>(&*location)) {
      if (std::optional<std::string> problem = store::redis_prefix_problem(options.redis_prefix)) {
        throw UsageError(*problem);
      }
      store::RedisLocation redis = *parsed;
      complete_redis_location(options, redis);
      return store::open_store(std::move(redis), settings);
    }
    path = std::get<store::SqliteLocation>(*location).path;
  }
  settings.lock_timeout = sqlite_settings(options).lock_timeout;
  return store::open_store(
      path.empty() ? locate_database(options) : store::DatabaseLocation{path, "", ""}, settings);
}

} // namespace

} // namespace ratelimit::cli
