#include "cli/settings.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <map>
#include <string>
#include <vector>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;

// One invocation: its global options, its environment (not the process's) and what its
// configuration files say, with how many times what they say was asked for.
struct Invocation {
  cli::GlobalOptions options;
  std::map<std::string, std::string> environment{{"HOME", "/home/u"}};
  std::string files;
  int consulted = 0;

  core::Result<cli::StoreSettings> resolve() {
    core::Result<cli::Config> config = cli::parse_config(files, "limits.toml");
    REQUIRE_MESSAGE(config.ok(), (config.ok() ? "" : config.error()));
    cli::ConfigSource source = [&]() -> const core::Result<cli::Config>& {
      ++consulted;
      return config;
    };
    return cli::resolve_store_settings(options, lookup(), source);
  }

  cli::StoreSettings settings() {
    core::Result<cli::StoreSettings> settings = resolve();
    REQUIRE_MESSAGE(settings.ok(), (settings.ok() ? "" : settings.error()));
    return *settings;
  }

  std::string error() {
    core::Result<cli::StoreSettings> settings = resolve();
    REQUIRE_FALSE(settings.ok());
    return settings.error();
  }

  cli::Environment lookup() const {
    return [this](const char* name) -> const char* {
      auto found = environment.find(name);
      return found == environment.end() ? nullptr : found->second.c_str();
    };
  }
};

// Where `settings` keep keys: a database's path, or a Redis server's address.
std::string where(const cli::StoreSettings& settings) {
  if (const auto* database = std::get_if<store::DatabaseLocation>(&settings.target)) {
    return "sqlite:" + database->path;
  }
  return "redis:" + std::get<store::RedisLocation>(settings.target).address();
}

store::RedisLocation redis(const cli::StoreSettings& settings) {
  REQUIRE(std::holds_alternative<store::RedisLocation>(settings.target));
  return std::get<store::RedisLocation>(settings.target);
}

} // namespace

TEST_CASE("cli::resolve_store_settings: nothing given, the default database and the defaults") {
  Invocation invocation;
  cli::StoreSettings settings = invocation.settings();
  const auto& database = std::get<store::DatabaseLocation>(settings.target);
  CHECK(database.path == "/home/u/.local/state/ratelimit/ratelimit.db");
  CHECK(database.state_directory == "/home/u/.local/state/ratelimit");
  CHECK(database.home == "/home/u");
  CHECK(settings.open.timeout == k_second);
  CHECK(settings.open.lock_timeout == 10 * k_second);
  CHECK(settings.open.redis_prefix == "ratelimit:");
  CHECK(settings.on_error == cli::OnStoreError::deny);
  REQUIRE(settings.local_database.ok());
  CHECK(settings.local_database->path == database.path);
  // The files may name the store: read.
  CHECK(invocation.consulted > 0);

  invocation.environment["XDG_STATE_HOME"] = "/xdg/state";
  CHECK(where(invocation.settings()) == "sqlite:/xdg/state/ratelimit/ratelimit.db");
  // Not an absolute path: not a state directory.
  invocation.environment["XDG_STATE_HOME"] = "state";
  CHECK(where(invocation.settings()) == "sqlite:/home/u/.local/state/ratelimit/ratelimit.db");
}

TEST_CASE("cli::resolve_store_settings: without HOME, no default database, told only when "
          "needed") {
  Invocation invocation;
  invocation.environment.clear();
  CHECK(invocation.error() ==
        "cannot find the database: HOME is not set; give --db PATH or set RATELIMIT_DB");
  invocation.options.store = "redis://h";
  cli::StoreSettings settings = invocation.settings();
  CHECK(where(settings) == "redis:h:6379");
  REQUIRE_FALSE(settings.local_database.ok());
  CHECK(settings.local_database.error().starts_with("cannot find the database: HOME is not set"));
}

TEST_CASE("cli::resolve_store_settings: the store is --store, else --db, else $RATELIMIT_STORE, "
          "else $RATELIMIT_DB, else [store] url, else the default database") {
  struct Case {
    std::optional<std::string> store, db;
    const char* store_variable;
    const char* db_variable;
    const char* url;
    std::string expected;
  };
  const Case cases[] = {
      {"redis://o", "o.db", "redis://e", "e.db", "redis://f", "error"},
      {"redis://o", std::nullopt, "redis://e", "e.db", "redis://f", "redis:o:6379"},
      {std::nullopt, "o.db", "redis://e", "e.db", "redis://f", "sqlite:o.db"},
      {std::nullopt, std::nullopt, "redis://e", "e.db", "redis://f", "redis:e:6379"},
      {std::nullopt, std::nullopt, nullptr, "e.db", "redis://f", "sqlite:e.db"},
      {std::nullopt, std::nullopt, nullptr, nullptr, "redis://f", "redis:f:6379"},
      {std::nullopt, std::nullopt, nullptr, nullptr, "sqlite:f.db", "sqlite:f.db"},
      {std::nullopt, std::nullopt, nullptr, nullptr, nullptr,
       "sqlite:/home/u/.local/state/ratelimit/ratelimit.db"},
      {"sqlite:o.db", std::nullopt, nullptr, "e.db", nullptr, "sqlite:o.db"},
      // An empty value is none.
      {"", std::nullopt, "", "e.db", nullptr, "sqlite:e.db"},
      {std::nullopt, std::nullopt, "", "", "redis://f", "redis:f:6379"},
  };
  for (const Case& test : cases) {
    Invocation invocation;
    invocation.options.store = test.store;
    invocation.options.db = test.db;
    if (test.store_variable) {
      invocation.environment["RATELIMIT_STORE"] = test.store_variable;
    }
    if (test.db_variable) {
      invocation.environment["RATELIMIT_DB"] = test.db_variable;
    }
    if (test.url) {
      invocation.files = fmt::format("[store]\nurl = \"{}\"\n", test.url);
    }
    CAPTURE(test.expected);
    core::Result<cli::StoreSettings> settings = invocation.resolve();
    if (test.expected == "error") {
      REQUIRE_FALSE(settings.ok());
      CHECK(settings.error() == "--db and --store both name a store; give one of them (or "
                                "--on-store-error=local, where --db names the local database)");
      continue;
    }
    REQUIRE(settings.ok());
    CHECK(where(*settings) == test.expected);
  }
}

TEST_CASE("cli::resolve_store_settings: under local, --store is the store and --db the local "
          "database") {
  Invocation invocation;
  invocation.options.store = "redis://h";
  invocation.options.db = "local.db";
  invocation.options.on_store_error = "local";
  cli::StoreSettings settings = invocation.settings();
  CHECK(where(settings) == "redis:h:6379");
  CHECK(settings.on_error == cli::OnStoreError::local);
  REQUIRE(settings.local_database.ok());
  CHECK(settings.local_database->path == "local.db");
  CHECK(settings.local_database->state_directory.empty());
  // $RATELIMIT_DB names it as well, and the default database when nothing does.
  invocation.options.db.reset();
  invocation.environment["RATELIMIT_DB"] = "env.db";
  CHECK(invocation.settings().local_database->path == "env.db");
  invocation.environment.erase("RATELIMIT_DB");
  CHECK(invocation.settings().local_database->path ==
        "/home/u/.local/state/ratelimit/ratelimit.db");
}

TEST_CASE("cli::resolve_store_settings: [store] timeout and on_error apply as url does: after "
          "the command line and the environment") {
  Invocation invocation;
  invocation.files = "[store]\ntimeout = \"250ms\"\non_error = \"allow\"\n";
  cli::StoreSettings settings = invocation.settings();
  CHECK(settings.open.timeout == 250 * core::k_nanos_per_milli);
  CHECK(settings.on_error == cli::OnStoreError::allow);
  // The command line wins.
  invocation.options.store_timeout = "2s";
  invocation.options.on_store_error = "deny";
  settings = invocation.settings();
  CHECK(settings.open.timeout == 2 * k_second);
  CHECK(settings.on_error == cli::OnStoreError::deny);
  // A store named on the command line or in the environment takes nothing from the files,
  // which are then not read.
  for (auto name : {&cli::GlobalOptions::db, &cli::GlobalOptions::store}) {
    Invocation named;
    named.files = invocation.files;
    named.options.*name = "sqlite:x.db";
    settings = named.settings();
    CHECK(settings.open.timeout == k_second);
    CHECK(settings.on_error == cli::OnStoreError::deny);
    CHECK(named.consulted == 0);
  }
  for (auto [variable, value] :
       {std::pair{"RATELIMIT_DB", "x.db"}, std::pair{"RATELIMIT_STORE", "sqlite:x.db"}}) {
    Invocation named;
    named.files = invocation.files;
    named.environment[variable] = value;
    settings = named.settings();
    CHECK(settings.open.timeout == k_second);
    CHECK(settings.on_error == cli::OnStoreError::deny);
    CHECK(named.consulted == 0);
  }
  Invocation local;
  local.files = "[store]\non_error = \"local\"\n";
  CHECK(local.settings().on_error == cli::OnStoreError::local);
  // The command line's is checked by its validator first; what would get past it is an error.
  local.options.on_store_error = "fail";
  CHECK(local.error() == "--on-store-error: invalid value \"fail\": expected deny, allow or "
                         "local");
}

TEST_CASE("cli::resolve_store_settings parses and checks the timeouts") {
  Invocation invocation;
  invocation.options.store_timeout = "soon";
  CHECK(invocation.error().starts_with("--store-timeout: invalid duration \"soon\""));
  invocation.options.store_timeout = "0s";
  CHECK(invocation.error() == "--store-timeout: expected a duration above 0, e.g. 1s, 500ms");
  // Given empty: refused, as -t "" is, not the default.
  invocation.options.store_timeout = "";
  CHECK(invocation.error().starts_with("--store-timeout: invalid duration \"\""));
  invocation.options.lock_timeout = "";
  invocation.options.store_timeout.reset();
  CHECK(invocation.error().starts_with("--lock-timeout: invalid duration \"\""));
  invocation.options.lock_timeout.reset();
  invocation.options.store_timeout = "1.5s";
  CHECK(invocation.settings().open.timeout == 1500 * core::k_nanos_per_milli);

  invocation.options.lock_timeout = "-1s";
  CHECK(invocation.error().starts_with("--lock-timeout: invalid duration \"-1s\""));
  invocation.options.lock_timeout = "0";
  CHECK(invocation.settings().open.lock_timeout == 0);
  invocation.options.lock_timeout = "2min";
  CHECK(invocation.settings().open.lock_timeout == 120 * k_second);
  // Whatever the store: an option given is checked.
  invocation.options.store = "redis://h";
  invocation.options.lock_timeout = "soon";
  CHECK(invocation.error().starts_with("--lock-timeout: invalid duration \"soon\""));
}

TEST_CASE("cli::resolve_store_settings: the Redis prefix is --redis-prefix, even empty, else "
          "$RATELIMIT_REDIS_PREFIX, else ratelimit:") {
  Invocation invocation;
  invocation.options.store = "redis://h";
  CHECK(invocation.settings().open.redis_prefix == "ratelimit:");
  invocation.environment["RATELIMIT_REDIS_PREFIX"] = "";
  CHECK(invocation.settings().open.redis_prefix == "ratelimit:");
  invocation.environment["RATELIMIT_REDIS_PREFIX"] = "env:";
  CHECK(invocation.settings().open.redis_prefix == "env:");
  invocation.options.redis_prefix = "app:";
  CHECK(invocation.settings().open.redis_prefix == "app:");
  invocation.options.redis_prefix = "";
  CHECK(invocation.settings().open.redis_prefix.empty());
  // Braces would place a key's names apart on Redis Cluster: refused for Redis only.
  invocation.options.redis_prefix = "a{b}:";
  CHECK(invocation.error().starts_with("invalid Redis key prefix \"a{b}:\""));
  invocation.options.store = "sqlite:x.db";
  CHECK(invocation.settings().open.redis_prefix == "a{b}:");
}

TEST_CASE("cli::resolve_store_settings: a Redis password from the URL, else "
          "$RATELIMIT_STORE_PASSWORD") {
  Invocation invocation;
  invocation.options.store = "redis://:secret@h";
  invocation.environment["RATELIMIT_STORE_PASSWORD"] = "other";
  CHECK(redis(invocation.settings()).password == "secret");
  invocation.options.store = "redis://h";
  CHECK(redis(invocation.settings()).password == "other");
  invocation.options.store = "redis://app@h";
  CHECK(redis(invocation.settings()).password == "other");
  invocation.environment.erase("RATELIMIT_STORE_PASSWORD");
  CHECK(invocation.error().starts_with("the store URL names the user \"app\" but no password: "
                                       "give it in RATELIMIT_STORE_PASSWORD or in the URL"));
  invocation.options.store = "redis://h:port";
  CHECK(invocation.error().starts_with("invalid store \"redis://h:port\""));
}

TEST_CASE("cli::resolve_store_settings: TLS files from the command line, else the environment, "
          "else [store] when the files name the store") {
  constexpr const char* k_files = "[store]\nurl = \"rediss://h\"\nca = \"/f/ca.pem\"\n"
                                  "cert = \"/f/c.pem\"\nkey = \"/f/k.pem\"\n";
  Invocation invocation;
  invocation.files = k_files;
  store::TlsFiles from_file = redis(invocation.settings()).tls_files;
  CHECK(from_file.ca_file == "/f/ca.pem");
  CHECK(from_file.ca_given_by == "[store] ca at limits.toml:3");
  CHECK(from_file.cert_file == "/f/c.pem");
  CHECK(from_file.cert_given_by == "[store] cert at limits.toml:4");
  CHECK(from_file.key_file == "/f/k.pem");
  CHECK(from_file.key_given_by == "[store] key at limits.toml:5");
  {
    // The environment wins over the files, the command line over both; a certificate from
    // outside the files takes no key from them.
    Invocation from_env = invocation;
    from_env.environment["RATELIMIT_STORE_CA"] = "/env/ca.pem";
    from_env.environment["RATELIMIT_STORE_CERT"] = "/env/c.pem";
    store::TlsFiles files = redis(from_env.settings()).tls_files;
    CHECK(files.ca_file == "/env/ca.pem");
    CHECK(files.ca_given_by == "--store-ca");
    CHECK(files.cert_file == "/env/c.pem");
    CHECK(files.key_file.empty());
    from_env.options.store_ca = "/opt/ca.pem";
    CHECK(redis(from_env.settings()).tls_files.ca_file == "/opt/ca.pem");
  }
  {
    // A key on the command line goes with the files' certificate.
    Invocation key = invocation;
    key.options.store_key = "/opt/k.pem";
    store::TlsFiles files = redis(key.settings()).tls_files;
    CHECK(files.cert_file == "/f/c.pem");
    CHECK(files.key_file == "/opt/k.pem");
    CHECK(files.key_given_by == "--store-key");
  }
  // A store named on the command line or in the environment takes nothing from the files.
  Invocation named = invocation;
  named.options.store = "rediss://other";
  store::TlsFiles files = redis(named.settings()).tls_files;
  CHECK(files.ca_file.empty());
  CHECK(files.cert_file.empty());
  CHECK(files.key_file.empty());
  Invocation from_env = invocation;
  from_env.environment["RATELIMIT_STORE"] = "rediss://other";
  CHECK(redis(from_env.settings()).tls_files.ca_file.empty());
  // Without TLS, none.
  Invocation plain;
  plain.options.store = "redis://h";
  plain.options.store_ca = "/opt/ca.pem";
  CHECK(redis(plain.settings()).tls_files.ca_file.empty());
  // A key without a certificate anywhere is an error.
  Invocation key_only;
  key_only.files = "[store]\nurl = \"rediss://h\"\nca = \"/f/ca.pem\"\n";
  key_only.options.store_key = "/opt/k.pem";
  CHECK(key_only.error() == "--store-key names the key of a client certificate, but no "
                            "--store-cert (or RATELIMIT_STORE_CERT) names the certificate");
}

TEST_CASE("cli::resolve_store_settings keeps TLS sessions in the state directory unless "
          "RATELIMIT_TLS_SESSION_CACHE is off") {
  Invocation invocation;
  invocation.environment["RATELIMIT_STORE"] = "rediss://h";
  invocation.environment["XDG_STATE_HOME"] = "/xdg/state";
  store::TlsFiles files = redis(invocation.settings()).tls_files;
  CHECK(files.session_directory == "/xdg/state/ratelimit/tls-sessions");
  CHECK(files.session_home.empty());
  invocation.environment.erase("XDG_STATE_HOME");
  files = redis(invocation.settings()).tls_files;
  CHECK(files.session_directory == "/home/u/.local/state/ratelimit/tls-sessions");
  CHECK(files.session_home == "/home/u");
  invocation.environment["RATELIMIT_TLS_SESSION_CACHE"] = "on";
  CHECK(redis(invocation.settings()).tls_files.session_directory ==
        "/home/u/.local/state/ratelimit/tls-sessions");
  invocation.environment["RATELIMIT_TLS_SESSION_CACHE"] = "off";
  CHECK(redis(invocation.settings()).tls_files.session_directory.empty());
  invocation.environment["RATELIMIT_TLS_SESSION_CACHE"] = "no";
  CHECK(invocation.error() == "invalid RATELIMIT_TLS_SESSION_CACHE \"no\": expected on or off");
  // Without a home, none: the decision is made all the same, with a full handshake.
  invocation.environment.erase("RATELIMIT_TLS_SESSION_CACHE");
  invocation.environment.erase("HOME");
  CHECK(redis(invocation.settings()).tls_files.session_directory.empty());
}

TEST_CASE("cli::resolve_store_settings: configuration files that cannot be read are an error "
          "when they decide") {
  cli::GlobalOptions options;
  core::Result<cli::Config> unreadable =
      core::Result<cli::Config>::failure("cannot read the configuration file \"x\": it does not "
                                         "exist");
  cli::ConfigSource config = [&]() -> const core::Result<cli::Config>& { return unreadable; };
  cli::Environment environment = [](const char* name) -> const char* {
    return std::string_view(name) == "HOME" ? "/home/u" : nullptr;
  };
  auto settings = cli::resolve_store_settings(options, environment, config);
  REQUIRE_FALSE(settings.ok());
  CHECK(settings.error() == unreadable.error());
  options.db = "x.db";
  CHECK(cli::resolve_store_settings(options, environment, config).ok());
}

TEST_CASE("cli::store_environment: the store of the command line for a nested ratelimit") {
  using Variables = std::vector<cli::EnvironmentVariable>;
  cli::GlobalOptions options;
  std::map<std::string, std::string> variables;
  cli::Environment environment = [&](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
  CHECK(cli::store_environment(options, environment) ==
        Variables{{"RATELIMIT_REDIS_PREFIX", "ratelimit:"}});
  variables["RATELIMIT_REDIS_PREFIX"] = "env:";
  CHECK(cli::store_environment(options, environment) ==
        Variables{{"RATELIMIT_REDIS_PREFIX", "env:"}});
  options.db = "x.db";
  options.config = "limits.toml";
  CHECK(cli::store_environment(options, environment) ==
        Variables{{"RATELIMIT_DB", "x.db"},
                  {"RATELIMIT_CONFIG", "limits.toml"},
                  {"RATELIMIT_STORE", std::nullopt},
                  {"RATELIMIT_REDIS_PREFIX", "env:"}});
  options.store = "rediss://h";
  options.redis_prefix = "";
  options.store_ca = "ca.pem";
  options.store_cert = "";
  options.config.reset();
  CHECK(cli::store_environment(options, environment) ==
        Variables{{"RATELIMIT_DB", "x.db"},
                  {"RATELIMIT_STORE", "rediss://h"},
                  {"RATELIMIT_REDIS_PREFIX", ""},
                  {"RATELIMIT_STORE_CA", "ca.pem"}});
  options.db.reset();
  CHECK(cli::store_environment(options, environment) == Variables{{"RATELIMIT_STORE", "rediss://h"},
                                                                  {"RATELIMIT_REDIS_PREFIX", ""},
                                                                  {"RATELIMIT_STORE_CA", "ca.pem"},
                                                                  {"RATELIMIT_DB", std::nullopt}});
}

TEST_CASE("cli::named_config_file: --config, else $RATELIMIT_CONFIG") {
  cli::GlobalOptions options;
  const char* variable = nullptr;
  cli::Environment environment = [&](const char*) { return variable; };
  CHECK(cli::named_config_file(options, environment).empty());
  variable = "env.toml";
  CHECK(cli::named_config_file(options, environment) == "env.toml");
  options.config = "option.toml";
  CHECK(cli::named_config_file(options, environment) == "option.toml");
  options.config = "";
  CHECK(cli::named_config_file(options, environment) == "env.toml");
}

TEST_CASE("cli::resolve_store_settings starts a TLS relay unless RATELIMIT_TLS_RELAY is off or "
          "sessions are not kept") {
  Invocation invocation;
  invocation.environment["RATELIMIT_STORE"] = "rediss://h";
  invocation.environment["XDG_STATE_HOME"] = "/xdg/state";
  CHECK(redis(invocation.settings()).tls_files.relay);
  invocation.environment["RATELIMIT_TLS_RELAY"] = "on";
  CHECK(redis(invocation.settings()).tls_files.relay);
  invocation.environment["RATELIMIT_TLS_RELAY"] = "off";
  CHECK_FALSE(redis(invocation.settings()).tls_files.relay);
  invocation.environment["RATELIMIT_TLS_RELAY"] = "yes";
  CHECK(invocation.error() == "invalid RATELIMIT_TLS_RELAY \"yes\": expected on or off");
  invocation.environment.erase("RATELIMIT_TLS_RELAY");
  invocation.environment["RATELIMIT_TLS_SESSION_CACHE"] = "off";
  CHECK_FALSE(redis(invocation.settings()).tls_files.relay);
}
