#pragma once

#include "cli/config_file.hpp"
#include "cli/global_options.hpp"
#include "core/result.hpp"
#include "store/open_store.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::cli {

// What a store that fails does to a decision (--on-store-error).
enum class OnStoreError {
  deny,  // fail, status 3
  allow, // grant without the store, with a warning
  local, // a remote store out of reach: decide on the local database, with a warning
};

// The environment that settings are read from: the value of the variable `name`, or null when
// it is not set. The process's own is std::getenv.
using Environment = std::function<const char*(const char* name)>;

// What the configuration files say, or why they cannot be read (ConfigFiles::read). Called
// only when the files decide something.
using ConfigSource = std::function<const core::Result<Config>&()>;

// A variable of the environment of the commands that `run` starts: set to `value`, or unset
// when it has none.
struct EnvironmentVariable {
  const char* name = nullptr;
  std::optional<std::string> value;

  bool operator==(const EnvironmentVariable& other) const {
    return std::string_view(name) == other.name && value == other.value;
  }
};

// Where the keys of one invocation live and what to do when that store fails, once the
// command line, the environment and the configuration files have had their say.
struct StoreSettings {
  // A SQLite database, or a Redis server with its password (the URL's, else
  // $RATELIMIT_STORE_PASSWORD) and TLS files.
  store::StoreTarget target;
  // The Redis key prefix and timeout, the SQLite lock timeout; the creation is each command's.
  store::StoreSettings open;
  OnStoreError on_error = OnStoreError::deny;
  // Where decisions go when a remote store is out of reach under --on-store-error=local: --db,
  // else $RATELIMIT_DB, else the default database. Its error (HOME is not set) is told only
  // when the database is needed.
  core::Result<store::DatabaseLocation> local_database;
  // What a nested ratelimit needs to reach the same store whatever its own command line says
  // (see store_environment).
  std::vector<EnvironmentVariable> nested_environment;
};

// Resolves the store's settings. Each comes from its option, else its environment variable,
// else its key in the [store] section of the configuration files, else its default (see
// k_setting_sources in settings.cpp); the files decide only when neither the command line nor
// the environment names the store. Durations are parsed and checked, the URL parsed; `config`
// is called only when the files decide. The error is one line naming the bad value and the
// accepted form: a duration or URL that does not parse, --db and --store together (but under
// --on-store-error=local, where --db names the local database), a Redis user without a
// password, a key without a certificate, a prefix Redis Cluster would misplace, no database
// to be found (HOME not set), configuration files that cannot be read.
core::Result<StoreSettings> resolve_store_settings(const GlobalOptions& options,
                                                   const Environment& environment,
                                                   const ConfigSource& config);

// The variables a command started by `run` needs to reach the store `options` name, whatever
// its own command line says: each of --db, --store, --config, --store-ca, --store-cert and
// --store-key given, as its variable; RATELIMIT_STORE or RATELIMIT_DB unset when the other
// one alone is given; RATELIMIT_REDIS_PREFIX, always.
std::vector<EnvironmentVariable> store_environment(const GlobalOptions& options,
                                                   const Environment& environment);

// The configuration file named: --config, else $RATELIMIT_CONFIG; empty when none is.
std::string named_config_file(const GlobalOptions& options, const Environment& environment);

} // namespace ratelimit::cli
