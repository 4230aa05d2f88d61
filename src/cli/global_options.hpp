#pragma once

#include "cli/cli11_fwd.hpp"
#include "cli/config_file.hpp"
#include "core/time.hpp"
#include "store/store_url.hpp"

#include <memory>
#include <optional>
#include <string>

namespace ratelimit::store {
class Store;
}

namespace ratelimit::cli {

// Options that every command takes, before or after the command name.
struct GlobalOptions {
  std::string db;
  bool json = false;
  bool quiet = false;
  // --on-store-error: "deny" (exit 3), "allow" (grant with a warning) or "local" (decide on
  // the local database); empty when not given (see `on_store_error`).
  std::string on_store_error;
  int limited_exit_code = 1;
  std::string lock_timeout = "10s";
  std::string store;                       // --store URL; empty: $RATELIMIT_STORE, else --db
  std::string redis_prefix = "ratelimit:"; // --redis-prefix
  std::string store_timeout; // --store-timeout: Redis connect and commands; empty: not given
  std::string store_ca;      // --store-ca FILE (rediss://); else $RATELIMIT_STORE_CA
  std::string store_cert;    // --store-cert FILE; else $RATELIMIT_STORE_CERT
  std::string store_key;     // --store-key FILE; else $RATELIMIT_STORE_KEY
  std::string config;        // --config FILE: the named limits and the store
  // The configuration files, read once when first needed (see `configuration`).
  mutable std::optional<Config> loaded_config;
  // Why decisions went to the local database under --on-store-error=local (the remote
  // store's failure), once they have; reported with --json, and warned of once.
  mutable std::string local_fallback;
};

// What a store that fails does to a decision (--on-store-error).
enum class OnStoreError {
  deny,  // fail, status 3
  allow, // grant without the store, with a warning
  local, // a remote store out of reach: decide on the local database, with a warning
};

// What the configuration files (`config_files(options.config)`) say, read at the first call.
// Throws UsageError for a file that cannot be read or parsed.
const Config& configuration(const GlobalOptions& options);

void add_global_options(CLI::App& app, GlobalOptions& options);

// Sets in this process's environment what a nested ratelimit needs to reach the store
// `options` name, whatever its own command line says: RATELIMIT_STORE or RATELIMIT_DB for
// --store or --db (the other one unset, unless both are given), RATELIMIT_CONFIG for --config,
// RATELIMIT_REDIS_PREFIX, and RATELIMIT_STORE_CA, _CERT, _KEY for --store-ca, --store-cert,
// --store-key. `run` calls it before it starts its command.
void export_store_environment(const GlobalOptions& options);
// What a failing store does: --on-store-error, else, when neither the command line nor the
// environment names the store, the configuration's [store] on_error; else deny. Throws
// UsageError for a configuration file that cannot be read.
OnStoreError on_store_error(const GlobalOptions& options);

// --store-timeout, with the same precedence: the option, else the configuration's [store]
// timeout when the command line and the environment name no store, else 1s. Throws
// UsageError.
core::Nanos store_timeout(const GlobalOptions& options);

// The TLS files of a rediss:// store: each option (--store-ca, --store-cert, --store-key),
// else its variable (RATELIMIT_STORE_CA, _CERT, _KEY), else, when neither the command line
// nor the environment names the store, the configuration's [store] ca, cert, key. A key from
// the configuration only goes with the certificate from there. Also where TLS sessions are
// kept between processes: tls-sessions/ in the state directory ($XDG_STATE_HOME/ratelimit,
// else ~/.local/state/ratelimit), unless $RATELIMIT_TLS_SESSION_CACHE is "off". Throws
// UsageError for a key without a certificate, a configuration file that cannot be read, or a
// value of that variable other than on and off.
store::TlsFiles tls_files(const GlobalOptions& options);

// The database path: --db, else $RATELIMIT_DB, else $XDG_STATE_HOME/ratelimit/ratelimit.db
// (~/.local/state/ratelimit/ratelimit.db).
std::string database_path(const GlobalOptions& options);

// Opens the store the options name: --store, else --db, else $RATELIMIT_STORE, else the
// database of `database_path`. --store and --db together are a usage error, but under
// --on-store-error=local, where --db names the local database. A missing SQLite database is
// created, the default one in a directory of mode 0700. A Redis URL without a password takes
// $RATELIMIT_STORE_PASSWORD's. Throws StoreError or UsageError.
std::unique_ptr<store::Store> open_store(const GlobalOptions& options);

// The same for the commands that only read or forget keys: a missing SQLite database is
// not created (nor its directory), and the store is then null.
std::unique_ptr<store::Store> open_existing_store(const GlobalOptions& options);

// Opens the SQLite database of `database_path` (created when missing), whatever store the
// options name: where --on-store-error=local decides when the remote store fails. Throws
// StoreError or UsageError.
std::unique_ptr<store::Store> open_local_store(const GlobalOptions& options);

} // namespace ratelimit::cli
