#include "cli/settings.hpp"

#include "core/rate.hpp"
#include "store/redis/redis_keys.hpp"

#include <cstddef>
#include <fmt/format.h>
#include <string_view>
#include <tuple>
#include <utility>

namespace ratelimit::cli {

namespace {

enum class Setting {
  db,
  store,
  config,
  on_store_error,
  store_timeout,
  lock_timeout,
  redis_prefix,
  store_ca,
  store_cert,
  store_key,
  store_password,
  tls_session_cache,
  tls_relay,
};

// Where one setting comes from, each place when it has one: its option, its environment
// variable, its key in the [store] section of the configuration files, its default.
struct SettingSource {
  Setting setting;
  std::optional<std::string> GlobalOptions::*option;
  const char* option_name;
  // Whether the option given empty is a value (a duration to refuse, a prefix), not none.
  bool empty_option_counts;
  const char* variable;
  std::optional<ConfigValue> Config::*file;
  const char* file_key;
  const char* default_value;
};

// Every setting with more than its option, in the order of `Setting`. The first place that
// gives a value decides: the option, then the variable, then the file, then the default. An
// empty value is none, but an option's where the `empty` column says it counts: an empty
// duration is refused, as -t "" is, and an empty --redis-prefix names keys without one. The
// files decide only for a store they name: not once the command line or the environment names
// it (--store, --db, $RATELIMIT_STORE, $RATELIMIT_DB), whose [store] they do not describe.
// --db's default, the database in our state directory, is locate_database's to find.
// clang-format off
constexpr SettingSource k_setting_sources[] = {
  // setting                  option                          option name         empty  variable                       [store]                  key         default
  {Setting::db,                &GlobalOptions::db,             "--db",             false, "RATELIMIT_DB",                nullptr,                 nullptr,    nullptr},
  {Setting::store,             &GlobalOptions::store,          "--store",          false, "RATELIMIT_STORE",             &Config::store_url,      "url",      nullptr},
  {Setting::config,            &GlobalOptions::config,         "--config",         false, "RATELIMIT_CONFIG",            nullptr,                 nullptr,    nullptr},
  {Setting::on_store_error,    &GlobalOptions::on_store_error, "--on-store-error", true,  nullptr,                       &Config::store_on_error, "on_error", "deny"},
  {Setting::store_timeout,     &GlobalOptions::store_timeout,  "--store-timeout",  true,  nullptr,                       &Config::store_timeout,  "timeout",  "1s"},
  {Setting::lock_timeout,      &GlobalOptions::lock_timeout,   "--lock-timeout",   true,  nullptr,                       nullptr,                 nullptr,    "10s"},
  {Setting::redis_prefix,      &GlobalOptions::redis_prefix,   "--redis-prefix",   true,  "RATELIMIT_REDIS_PREFIX",      nullptr,                 nullptr,    "ratelimit:"},
  {Setting::store_ca,          &GlobalOptions::store_ca,       "--store-ca",       false, "RATELIMIT_STORE_CA",          &Config::store_ca,       "ca",       nullptr},
  {Setting::store_cert,        &GlobalOptions::store_cert,     "--store-cert",     false, "RATELIMIT_STORE_CERT",        &Config::store_cert,     "cert",     nullptr},
  {Setting::store_key,         &GlobalOptions::store_key,      "--store-key",      false, "RATELIMIT_STORE_KEY",         &Config::store_key,      "key",      nullptr},
  {Setting::store_password,    nullptr,                        nullptr,            false, "RATELIMIT_STORE_PASSWORD",    nullptr,                 nullptr,    nullptr},
  {Setting::tls_session_cache, nullptr,                        nullptr,            false, "RATELIMIT_TLS_SESSION_CACHE", nullptr,                 nullptr,    "on"},
  {Setting::tls_relay,         nullptr,                        nullptr,            false, "RATELIMIT_TLS_RELAY",         nullptr,                 nullptr,    "on"},
};
// clang-format on

constexpr bool in_setting_order() {
  for (std::size_t i = 0; i < std::size(k_setting_sources); ++i) {
    if (static_cast<std::size_t>(k_setting_sources[i].setting) != i) {
      return false;
    }
  }
  return true;
}
static_assert(in_setting_order(), "k_setting_sources lists the settings in their order");

const SettingSource& source_of(Setting setting) {
  return k_setting_sources[static_cast<std::size_t>(setting)];
}

// The place a value came from, the first one that wins.
enum class Place { option, environment, file, fallback };

struct Value {
  std::string text;
  Place place = Place::fallback;
  // For messages: the option's name (for its variable too), or `[store] KEY at FILE:LINE`.
  std::string given_by;
};

// A value that does not resolve: the message, one line.
struct SettingError {
  std::string message;
};

// The option's value, when given (see k_setting_sources for an empty one).
const std::string* option_value(const GlobalOptions& options, const SettingSource& source) {
  if (source.option == nullptr) {
    return nullptr;
  }
  const std::optional<std::string>& given = options.*source.option;
  if (!given || (given->empty() && !source.empty_option_counts)) {
    return nullptr;
  }
  return &*given;
}

const char* variable_value(const Environment& environment, const SettingSource& source) {
  const char* value = source.variable != nullptr ? environment(source.variable) : nullptr;
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// Our state directory, $XDG_STATE_HOME/ratelimit, else ~/.local/state/ratelimit, with the
// home directory it is in in the second case; nothing when HOME is not set.
std::optional<std::pair<std::string, std::string>> state_directory(const Environment& environment) {
  if (const char* state = environment("XDG_STATE_HOME"); state && *state == '/') {
    return std::pair{std::string(state) + "/ratelimit", std::string()};
  }
  const char* home = environment("HOME");
  if (!home || !*home) {
    return std::nullopt;
  }
  return std::pair{std::string(home) + "/.local/state/ratelimit", std::string(home)};
}

// Parses a duration `value` of the setting whose option is `option`, above 0 when `positive`.
core::Nanos duration_of(const Value& value, const char* option, bool positive) {
  auto duration = core::parse_duration(value.text);
  if (!duration) {
    throw SettingError{fmt::format("{}: {}", option, duration.error())};
  }
  if (positive && *duration <= 0) {
    throw SettingError{fmt::format("{}: expected a duration above 0, e.g. 1s, 500ms", option)};
  }
  return *duration;
}

// What store_environment says, with the Redis prefix resolved.
std::vector<EnvironmentVariable> nested_environment(const GlobalOptions& options,
                                                    const std::string& redis_prefix) {
  std::vector<EnvironmentVariable> variables;
  for (const SettingSource& source : k_setting_sources) {
    if (const std::string* given = option_value(options, source); given && source.variable) {
      variables.push_back({source.variable, *given});
    }
  }
  // The store named on the command line, whatever the environment named: one of them alone.
  bool store = option_value(options, source_of(Setting::store)) != nullptr;
  bool db = option_value(options, source_of(Setting::db)) != nullptr;
  if (store != db) {
    variables.push_back({store ? "RATELIMIT_DB" : "RATELIMIT_STORE", std::nullopt});
  }
  const SettingSource& prefix = source_of(Setting::redis_prefix);
  if (option_value(options, prefix) == nullptr) {
    variables.push_back({prefix.variable, redis_prefix});
  }
  return variables;
}

// Resolves one invocation's settings from its options, environment and configuration files.
class Resolution {
public:
  Resolution(const GlobalOptions& options, const Environment& environment,
             const ConfigSource& config)
      : m_options(options), m_environment(environment), m_config(config),
        m_file_decides(!outside_config(Setting::store) && !outside_config(Setting::db)) {}

  // The value of `setting` from the first place that gives one, or nothing. Throws
  // SettingError when the configuration files, needed, cannot be read.
  std::optional<Value> find(Setting setting) const {
    const SettingSource& source = source_of(setting);
    if (const std::string* given = option_value(m_options, source)) {
      return Value{*given, Place::option, source.option_name};
    }
    if (const char* value = variable_value(m_environment, source)) {
      return Value{value, Place::environment, source.option_name ? source.option_name : ""};
    }
    if (source.file != nullptr && m_file_decides) {
      const core::Result<Config>& config = m_config();
      if (!config) {
        throw SettingError{config.error()};
      }
      if (const std::optional<ConfigValue>& value = (*config).*source.file) {
        return Value{value->text, Place::file,
                     fmt::format("[store] {} at {}", source.file_key, value->defined_in)};
      }
    }
    if (source.default_value != nullptr) {
      return Value{source.default_value, Place::fallback, ""};
    }
    return std::nullopt;
  }

  // The same for a setting that has a default.
  Value get(Setting setting) const { return *find(setting); }

  StoreSettings store_settings() const {
    std::optional<Value> store = find(Setting::store);
    std::optional<Value> db = find(Setting::db);
    // Under --on-store-error=local, --db names where decisions go when the store fails.
    if (store && db && store->place == Place::option && db->place == Place::option &&
        on_store_error() != OnStoreError::local) {
      throw SettingError{"--db and --store both name a store; give one of them (or "
                         "--on-store-error=local, where --db names the local database)"};
    }
    store::StoreSettings open;
    open.timeout = duration_of(get(Setting::store_timeout), "--store-timeout", true);
    open.redis_prefix = get(Setting::redis_prefix).text;
    core::Result<store::DatabaseLocation> local_database = locate_database(db);
    // The better placed of --store and --db names the store; at the same place, --store.
    bool url_names_it = store && (!db || store->place <= db->place);
    std::optional<store::StoreTarget> target;
    if (url_names_it) {
      target = locate_store(store->text, open.redis_prefix);
    } else if (!local_database) {
      throw SettingError{local_database.error()};
    } else {
      target = *local_database;
    }
    open.lock_timeout = duration_of(get(Setting::lock_timeout), "--lock-timeout", false);
    std::vector<EnvironmentVariable> nested = nested_environment(m_options, open.redis_prefix);
    return StoreSettings{std::move(*target), std::move(open), on_store_error(),
                         std::move(local_database), std::move(nested)};
  }

private:
  // Whether the command line or the environment gives `setting`.
  bool outside_config(Setting setting) const {
    const SettingSource& source = source_of(setting);
    return option_value(m_options, source) || variable_value(m_environment, source);
  }

  OnStoreError on_store_error() const {
    // Checked before: the option by its validator, the file's setting when read.
    std::string text = get(Setting::on_store_error).text;
    if (text == "allow") {
      return OnStoreError::allow;
    }
    if (text == "local") {
      return OnStoreError::local;
    }
    if (text != "deny") {
      throw SettingError{fmt::format("--on-store-error: invalid value \"{}\": expected deny, "
                                     "allow or local",
                                     text.substr(0, 64))};
    }
    return OnStoreError::deny;
  }

  // The database that --db or $RATELIMIT_DB (`db`) names, else the default one.
  core::Result<store::DatabaseLocation> locate_database(const std::optional<Value>& db) const {
    if (db) {
      return store::DatabaseLocation{db->text, "", ""};
    }
    auto state = state_directory(m_environment);
    if (!state) {
      return core::Result<store::DatabaseLocation>::failure(
          "cannot find the database: HOME is not set; give --db PATH or set RATELIMIT_DB");
    }
    auto [directory, home] = *state;
    return store::DatabaseLocation{directory + "/ratelimit.db", directory, home};
  }

  // The store a URL names; a Redis server with what it takes from outside the URL.
  store::StoreTarget locate_store(const std::string& url, const std::string& prefix) const {
    auto location = store::parse_store_url(url);
    if (!location) {
      throw SettingError{location.error()};
    }
    if (const auto* sqlite = std::get_if<store::SqliteLocation>(&*location)) {
      return store::DatabaseLocation{sqlite->path, "", ""};
    }
    if (std::optional<std::string> problem = store::redis::redis_prefix_problem(prefix)) {
      throw SettingError{*problem};
    }
    store::RedisLocation redis = std::get<store::RedisLocation>(*location);
    // The password from the environment, where `ps` does not show it; one in the URL wins.
    if (redis.password.empty()) {
      if (std::optional<Value> password = find(Setting::store_password)) {
        redis.password = password->text;
      }
    }
    if (!redis.user.empty() && redis.password.empty()) {
      throw SettingError{fmt::format("the store URL names the user \"{}\" but no password: give "
                                     "it in RATELIMIT_STORE_PASSWORD or in the URL, {}",
                                     redis.user.substr(0, 100), store::k_store_url_form)};
    }
    if (redis.tls) {
      redis.tls_files = tls_files();
    }
    return redis;
  }

  // The TLS files of a rediss:// store, and where TLS sessions are kept.
  store::TlsFiles tls_files() const {
    store::TlsFiles files;
    std::optional<Value> ca = find(Setting::store_ca);
    std::optional<Value> cert = find(Setting::store_cert);
    std::optional<Value> key = find(Setting::store_key);
    // A key from a file belongs to the certificate from there.
    if (key && key->place == Place::file && !(cert && cert->place == Place::file)) {
      key.reset();
    }
    for (auto [value, file, given_by] : {std::tuple{&ca, &files.ca_file, &files.ca_given_by},
                                         std::tuple{&cert, &files.cert_file, &files.cert_given_by},
                                         std::tuple{&key, &files.key_file, &files.key_given_by}}) {
      if (*value) {
        *file = (*value)->text;
        *given_by = (*value)->given_by;
      }
    }
    if (!files.key_file.empty() && files.cert_file.empty()) {
      throw SettingError{"--store-key names the key of a client certificate, but no "
                         "--store-cert (or RATELIMIT_STORE_CERT) names the certificate"};
    }
    std::string cache = get(Setting::tls_session_cache).text;
    if (cache != "on" && cache != "off") {
      throw SettingError{fmt::format("invalid RATELIMIT_TLS_SESSION_CACHE \"{}\": expected on or "
                                     "off",
                                     std::string_view(cache).substr(0, 64))};
    }
    std::string relay = get(Setting::tls_relay).text;
    if (relay != "on" && relay != "off") {
      throw SettingError{fmt::format("invalid RATELIMIT_TLS_RELAY \"{}\": expected on or off",
                                     std::string_view(relay).substr(0, 64))};
    }
    if (auto state = state_directory(m_environment); state && cache == "on") {
      files.session_directory = state->first + "/tls-sessions";
      files.session_home = state->second;
      files.relay = relay == "on";
    }
    return files;
  }

  const GlobalOptions& m_options;
  const Environment& m_environment;
  const ConfigSource& m_config;
  bool m_file_decides;
};

} // namespace

core::Result<StoreSettings> resolve_store_settings(const GlobalOptions& options,
                                                   const Environment& environment,
                                                   const ConfigSource& config) {
  try {
    return Resolution(options, environment, config).store_settings();
  } catch (const SettingError& error) {
    return core::Result<StoreSettings>::failure(error.message);
  }
}

std::vector<EnvironmentVariable> store_environment(const GlobalOptions& options,
                                                   const Environment& environment) {
  ConfigSource no_config;
  return nested_environment(
      options, Resolution(options, environment, no_config).get(Setting::redis_prefix).text);
}

std::string named_config_file(const GlobalOptions& options, const Environment& environment) {
  ConfigSource no_config;
  std::optional<Value> file = Resolution(options, environment, no_config).find(Setting::config);
  return file ? file->text : std::string();
}

} // namespace ratelimit::cli
