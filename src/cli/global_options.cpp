// The global options as the command line declares them: what --help says of each. What they
// mean is settings.cpp's to say.
#include "cli/global_options.hpp"

#include <CLI/CLI.hpp>

namespace ratelimit::cli {

namespace {

// The headings under which --help lists the global options that are not about the output.
constexpr const char* k_store_group = "Store options";
constexpr const char* k_tls_group = "Redis TLS options";

} // namespace

void add_global_options(CLI::App& app, GlobalOptions& options, const MentionedOptions& mentioned) {
  if (mentioned.any_of("--db")) {
    app.add_option("--db", options.db, "SQLite database shared by all invocations")
        ->option_text("PATH")
        ->group(k_store_group)
        ->check(CLI::Validator(
            [](const std::string& value) {
              return value.empty() ? "an empty path names no file" : std::string();
            },
            "PATH"));
  }
  if (mentioned.any_of("--json")) {
    app.add_flag("--json", options.output.json, "Print one JSON object per decision on stdout");
  }
  if (mentioned.any_of("-q,--quiet")) {
    app.add_flag("-q,--quiet", options.output.quiet, "Print nothing on a denial");
  }
  if (mentioned.any_of("--on-store-error")) {
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
  }
  if (mentioned.any_of("-E,--limited-exit-code")) {
    app.add_option("-E,--limited-exit-code", options.output.limited_exit_code,
                   "Exit status when limited (default 1)")
        ->option_text("N")
        ->check(CLI::Range(0, 255));
  }
  if (mentioned.any_of("--lock-timeout")) {
    app.add_option("--lock-timeout", options.lock_timeout,
                   "Longest wait for the database lock before failing with status 3 "
                   "(default 10s)")
        ->option_text("DURATION")
        ->group(k_store_group);
  }
  if (mentioned.any_of("--config")) {
    app.add_option("--config", options.config,
                   "Configuration file of named limits and the store (default "
                   "$RATELIMIT_CONFIG, else ~/.config/ratelimit/limits.toml and "
                   "/etc/ratelimit/limits.toml)")
        ->option_text("FILE");
  }
  if (mentioned.any_of("--store")) {
    app.add_option("--store", options.store,
                   "Where keys live: a redis://, rediss://, redis-sentinel://, unix:// or sqlite: "
                   "URL, in a form listed below (default $RATELIMIT_STORE, else the SQLite "
                   "database)")
        ->option_text("URL")
        ->group(k_store_group);
  }
  if (mentioned.any_of("--redis-prefix")) {
    app.add_option("--redis-prefix", options.redis_prefix,
                   "Prefix of the Redis key names (default $RATELIMIT_REDIS_PREFIX, else "
                   "ratelimit:)")
        ->option_text("PREFIX")
        ->group(k_store_group);
  }
  if (mentioned.any_of("--store-timeout")) {
    app.add_option("--store-timeout", options.store_timeout,
                   "Longest wait to connect to Redis and for each reply before failing with "
                   "status 3 (default [store] timeout, else 1s)")
        ->option_text("DURATION")
        ->group(k_store_group);
  }
  if (mentioned.any_of("--store-ca")) {
    app.add_option("--store-ca", options.store_ca,
                   "CA certificate (PEM) that the rediss:// server's certificate must verify "
                   "against, instead of the system's (default $RATELIMIT_STORE_CA, else [store] "
                   "ca)")
        ->option_text("FILE")
        ->group(k_tls_group);
  }
  if (mentioned.any_of("--store-cert")) {
    app.add_option("--store-cert", options.store_cert,
                   "Client certificate (PEM) for a rediss:// server that demands one (default "
                   "$RATELIMIT_STORE_CERT, else [store] cert)")
        ->option_text("FILE")
        ->group(k_tls_group);
  }
  if (mentioned.any_of("--store-key")) {
    app.add_option("--store-key", options.store_key,
                   "Private key (PEM) of --store-cert, if not in its file (default "
                   "$RATELIMIT_STORE_KEY, else [store] key)")
        ->option_text("FILE")
        ->group(k_tls_group);
  }
}

} // namespace ratelimit::cli
