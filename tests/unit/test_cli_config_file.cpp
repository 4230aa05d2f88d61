#include "cli/config_file.hpp"

#include "cli/global_options.hpp"
#include "cli/usage_error.hpp"
#include "scoped_env.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

using namespace ratelimit;
using cli::parse_config;
using test::ScopedEnv;

namespace {

cli::Config config(std::string_view text) {
  auto parsed = parse_config(text, "limits.toml");
  INFO("parse_config(\"", std::string(text), "\")");
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  return *parsed;
}

std::string config_error(std::string_view text) {
  auto parsed = parse_config(text, "limits.toml");
  INFO("parse_config(\"", std::string(text), "\")");
  REQUIRE_FALSE(parsed.ok());
  return parsed.error();
}

} // namespace

TEST_CASE("cli::parse_config reads named limits and the store") {
  cli::Config parsed = config(R"(
[limits.github]
rate = ["10/s", "5000/h"]
algorithm = "sliding-log"

[limits."nightly-sync"]
rate = "2/h"
burst = 1
cost = 1
timeout = "30s"

[store]
url = "redis://localhost:6379/0"
)");
  REQUIRE(parsed.limits.size() == 2);
  const cli::NamedLimit& github = parsed.limits.at("github");
  CHECK(github.rates == std::vector<std::string>{"10/s", "5000/h"});
  CHECK(github.algorithm == "sliding-log");
  CHECK(github.bursts.empty());
  CHECK_FALSE(github.cost);
  CHECK(github.defined_in == "limits.toml:2");
  const cli::NamedLimit& nightly = parsed.limits.at("nightly-sync");
  CHECK(nightly.rates == std::vector<std::string>{"2/h"});
  CHECK(nightly.bursts == std::vector<std::string>{"1"});
  CHECK(nightly.cost == "1");
  CHECK(nightly.timeout == "30s");
  CHECK(parsed.store_url == "redis://localhost:6379/0");
}

TEST_CASE("cli::parse_config: an empty file, or one of comments, defines nothing") {
  CHECK(config("").limits.empty());
  CHECK_FALSE(config("# nothing\n\n").store_url);
}

TEST_CASE("cli::parse_config: names may hold spaces and quotes") {
  cli::Config parsed = config("[limits.'a \"b\" c']\nrate = \"1/s\"\n");
  CHECK(parsed.limits.count("a \"b\" c") == 1);
}

TEST_CASE("cli::parse_config: errors read FILE:LINE: what is wrong") {
  CHECK(config_error("[limits.k\n").starts_with("limits.toml:1: "));
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\ncolour = 1\n") ==
        "limits.toml:3: unknown setting \"colour\" in [limits.k]; expected one of rate, "
        "algorithm, burst, cost, timeout");
  CHECK(config_error("[limits.k]\nrate = \"ten/s\"\n").starts_with("limits.toml:2: "));
  CHECK(config_error("[limits.k]\nrate = 10\n").starts_with("limits.toml:2: rate takes"));
  CHECK(config_error("[limits.k]\nrate = []\n").starts_with("limits.toml:2: rate takes"));
  CHECK(config_error("[limits.k]\nrate = [\"1/s\", 2]\n").starts_with("limits.toml:2: rate "));
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\nalgorithm = \"fast\"\n")
            .starts_with("limits.toml:3: unknown algorithm"));
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\nburst = 0\n")
            .starts_with("limits.toml:3: burst takes"));
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\ncost = \"1\"\n")
            .starts_with("limits.toml:3: cost takes"));
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\ntimeout = 30\n")
            .starts_with("limits.toml:3: timeout takes"));
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\ntimeout = \"soon\"\n")
            .starts_with("limits.toml:3: timeout: "));
  CHECK(config_error("[limits.k]\nalgorithm = \"gcra\"\n").starts_with("limits.toml:2: "));
  CHECK(config_error("[limits.k]\n").starts_with("limits.toml:1: [limits.k] has no rate"));
  CHECK(config_error("limits = 3\n").starts_with("limits.toml:1: limits must hold tables"));
  CHECK(config_error("[limits]\nk = 3\n").starts_with("limits.toml:2: limits.k must be a table"));
  CHECK(config_error("[other]\n").starts_with("limits.toml:1: unknown table [other]"));
  CHECK(config_error("[store]\nurl = \"\"\n").starts_with("limits.toml:2: url takes"));
  CHECK(config_error("[store]\nhost = \"x\"\n").starts_with("limits.toml:2: unknown setting"));
}

TEST_CASE("cli::parse_config checks a limit as a whole, as its options would be") {
  CHECK(config_error("[limits.k]\nrate = \"1/s\"\nalgorithm = \"fixed-window\"\nburst = 3\n")
            .starts_with("limits.toml:1: [limits.k]: a burst does not apply"));
  CHECK(config_error("[limits.k]\nrate = [\"1/s\", \"10/min\"]\nburst = [1, 2, 3]\n")
            .starts_with("limits.toml:1: [limits.k] has 3 bursts for 2 rates"));
  CHECK(config_error("[limits.k]\nrate = \"2/s\"\ncost = 3\n").starts_with("limits.toml:1: "));
  CHECK(config("[limits.k]\nrate = [\"1/s\", \"10/min\"]\nburst = [1, 2]\n").limits.size() == 1);
}

TEST_CASE("cli::parse_config: a message about an odd name stays on one line") {
  std::string error = config_error("[limits.\"a\\nb\"]\nrate = \"1/s\"\ncolour = 1\n");
  CHECK(error.find('\n') == std::string::npos);
  CHECK(error.starts_with("limits.toml:3: "));
}

TEST_CASE("cli::table_name quotes what a bare TOML key cannot be") {
  CHECK(cli::table_name("github") == "github");
  CHECK(cli::table_name("nightly-sync_2") == "nightly-sync_2");
  CHECK(cli::table_name("a b") == "\"a b\"");
  CHECK(cli::table_name("") == "\"\"");
}

TEST_CASE("cli::parse_config: any character where whitespace may be is an error, not a crash") {
  // toml++ 3.3 would reach undefined behaviour on these (see config_file.cpp).
  CHECK(config_error("[limit\xEF\xBB\xAFs.k]\n").starts_with("limits.toml:1: "));
  CHECK(config_error("\xCF\xBF;").starts_with("limits.toml:1: "));
  CHECK(config_error("# ok\nname \xC3\xA9= 1\n").starts_with("limits.toml:2: "));
  // In strings and comments they are text.
  CHECK(config("\xEF\xBB\xBF[limits.\"caf\xC3\xA9\"]\nrate = \"1/s\" # \xEF\xBB\xAF\n")
            .limits.size() == 1);
}

TEST_CASE("cli::parse_config reads the store's timeout and what to do when it fails") {
  cli::Config parsed = config("[store]\nurl = \"redis://h\"\ntimeout = \"2.5s\"\n"
                              "on_error = \"allow\"\n");
  CHECK(parsed.store_url == "redis://h");
  CHECK(parsed.store_timeout == "2.5s");
  CHECK(parsed.store_on_error == "allow");
  // Each alone: the url may come from the command line.
  CHECK(config("[store]\non_error = \"deny\"\n").store_on_error == "deny");
  CHECK(config("[store]\non_error = \"local\"\n").store_on_error == "local");
  CHECK_FALSE(config("[store]\non_error = \"deny\"\n").store_timeout);
  CHECK(config("[store]\ntimeout = \"300ms\"\n").store_timeout == "300ms");
}

TEST_CASE("cli::parse_config checks the store's timeout and on_error as their options") {
  CHECK(config_error("[store]\ntimeout = \"soon\"\n").starts_with("limits.toml:2: timeout: "));
  CHECK(config_error("[store]\ntimeout = 2\n") ==
        "limits.toml:2: timeout takes a duration, e.g. timeout = \"2s\"");
  CHECK(config_error("[store]\ntimeout = \"0s\"\n") ==
        "limits.toml:2: timeout: expected a duration above 0, e.g. 1s, 500ms");
  CHECK(config_error("[store]\non_error = \"fail\"\n") ==
        "limits.toml:2: on_error takes deny, allow or local, e.g. on_error = \"local\"");
  CHECK(config_error("[store]\non_error = true\n") ==
        "limits.toml:2: on_error takes deny, allow or local, e.g. on_error = \"local\"");
  CHECK(config_error("[store]\nretries = 3\n") ==
        "limits.toml:2: unknown setting \"retries\" in [store]; expected url, timeout, "
        "on_error, ca, cert or key");
}

namespace {

// Options whose configuration is `text`, as if read from the files.
cli::GlobalOptions options_with(std::string_view text) {
  cli::GlobalOptions options;
  options.loaded_config = config(text);
  return options;
}

} // namespace

TEST_CASE("cli: [store] timeout and on_error apply as url does: after the command line and "
          "the environment") {
  ScopedEnv no_db("RATELIMIT_DB", nullptr);
  ScopedEnv no_store("RATELIMIT_STORE", nullptr);
  constexpr std::string_view k_file = "[store]\ntimeout = \"250ms\"\non_error = \"allow\"\n";
  cli::GlobalOptions options = options_with(k_file);
  CHECK(cli::store_timeout(options) == 250 * core::k_nanos_per_milli);
  CHECK(cli::on_store_error(options) == cli::OnStoreError::allow);
  // The command line wins.
  options.store_timeout = "2s";
  options.on_store_error = "deny";
  CHECK(cli::store_timeout(options) == 2 * core::k_nanos_per_second);
  CHECK(cli::on_store_error(options) == cli::OnStoreError::deny);
  options.store_timeout = "0s";
  CHECK_THROWS_AS(cli::store_timeout(options), cli::UsageError);
  // A store named on the command line or in the environment takes nothing from the file.
  for (auto name : {&cli::GlobalOptions::db, &cli::GlobalOptions::store}) {
    cli::GlobalOptions named = options_with(k_file);
    named.*name = "sqlite:x.db";
    CHECK(cli::store_timeout(named) == core::k_nanos_per_second);
    CHECK(cli::on_store_error(named) == cli::OnStoreError::deny);
  }
  for (const char* variable : {"RATELIMIT_DB", "RATELIMIT_STORE"}) {
    ScopedEnv set(variable, "x.db");
    cli::GlobalOptions from_env = options_with(k_file);
    CHECK(cli::store_timeout(from_env) == core::k_nanos_per_second);
    CHECK(cli::on_store_error(from_env) == cli::OnStoreError::deny);
  }
  // local, from the file as from the command line.
  CHECK(cli::on_store_error(options_with("[store]\non_error = \"local\"\n")) ==
        cli::OnStoreError::local);
  cli::GlobalOptions local = options_with(k_file);
  local.on_store_error = "local";
  CHECK(cli::on_store_error(local) == cli::OnStoreError::local);
  // Nothing anywhere: the defaults.
  cli::GlobalOptions none = options_with("");
  CHECK(cli::store_timeout(none) == core::k_nanos_per_second);
  CHECK(cli::on_store_error(none) == cli::OnStoreError::deny);
}

TEST_CASE("cli::parse_config reads the store's TLS files, relative ones from the file's "
          "directory") {
  auto parsed = parse_config("[store]\nurl = \"rediss://h\"\nca = \"ca.pem\"\n"
                             "cert = \"/etc/ssl/client.pem\"\nkey = \"keys/client.key\"\n",
                             "/etc/ratelimit/limits.toml");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->store_ca);
  CHECK(parsed->store_ca->path == "/etc/ratelimit/ca.pem");
  CHECK(parsed->store_ca->defined_in == "/etc/ratelimit/limits.toml:3");
  REQUIRE(parsed->store_cert);
  CHECK(parsed->store_cert->path == "/etc/ssl/client.pem");
  REQUIRE(parsed->store_key);
  CHECK(parsed->store_key->path == "/etc/ratelimit/keys/client.key");
  CHECK(parsed->store_key->defined_in == "/etc/ratelimit/limits.toml:5");
  // A file named without a directory: its directory is the current one.
  CHECK(config("[store]\nca = \"ca.pem\"\n").store_ca->path == "ca.pem");
  CHECK(parse_config("[store]\nca = \"../ca.pem\"\n", "conf/limits.toml")->store_ca->path ==
        "conf/../ca.pem");
  CHECK_FALSE(config("[store]\nurl = \"rediss://h\"\n").store_ca);
}

TEST_CASE("cli::parse_config checks the store's TLS files") {
  CHECK(config_error("[store]\nca = \"\"\n") ==
        "limits.toml:2: ca takes the path of a PEM file, e.g. ca = \"/etc/ssl/redis/ca.pem\"");
  CHECK(config_error("[store]\ncert = 1\n") ==
        "limits.toml:2: cert takes the path of a PEM file, e.g. cert = "
        "\"/etc/ssl/redis/client.pem\"");
  CHECK(config_error("[store]\ncert = \"c.pem\"\nkey = [\"k\"]\n")
            .starts_with("limits.toml:3: key takes the path of a PEM file"));
  CHECK(config_error("[store]\nca = \"a\\u0000b\"\n").starts_with("limits.toml:2: ca takes"));
  CHECK(config_error("[store]\nurl = \"rediss://h\"\nkey = \"k.pem\"\n") ==
        "limits.toml:3: key names the private key of a client certificate, but [store] has no "
        "cert; add cert = \"PATH\" (the key may also be in its file)");
  CHECK(config_error("[store]\ncafile = \"x\"\n") ==
        "limits.toml:2: unknown setting \"cafile\" in [store]; expected url, timeout, "
        "on_error, ca, cert or key");
}

TEST_CASE("cli::tls_files: the command line, else the environment, else [store] when the file "
          "names the store") {
  ScopedEnv no_db("RATELIMIT_DB", nullptr);
  ScopedEnv no_store("RATELIMIT_STORE", nullptr);
  ScopedEnv no_ca("RATELIMIT_STORE_CA", nullptr);
  ScopedEnv no_cert("RATELIMIT_STORE_CERT", nullptr);
  ScopedEnv no_key("RATELIMIT_STORE_KEY", nullptr);
  constexpr std::string_view k_file = "[store]\nurl = \"rediss://h\"\nca = \"/f/ca.pem\"\n"
                                      "cert = \"/f/c.pem\"\nkey = \"/f/k.pem\"\n";
  store::TlsFiles from_file = cli::tls_files(options_with(k_file));
  CHECK(from_file.ca_file == "/f/ca.pem");
  CHECK(from_file.ca_given_by == "[store] ca at limits.toml:3");
  CHECK(from_file.cert_file == "/f/c.pem");
  CHECK(from_file.cert_given_by == "[store] cert at limits.toml:4");
  CHECK(from_file.key_file == "/f/k.pem");
  CHECK(from_file.key_given_by == "[store] key at limits.toml:5");
  {
    // The environment wins over the file, the command line over both; a certificate from
    // outside the file takes no key from it.
    ScopedEnv ca("RATELIMIT_STORE_CA", "/env/ca.pem");
    ScopedEnv cert("RATELIMIT_STORE_CERT", "/env/c.pem");
    store::TlsFiles from_env = cli::tls_files(options_with(k_file));
    CHECK(from_env.ca_file == "/env/ca.pem");
    CHECK(from_env.ca_given_by == "--store-ca");
    CHECK(from_env.cert_file == "/env/c.pem");
    CHECK(from_env.key_file.empty());
    cli::GlobalOptions options = options_with(k_file);
    options.store_ca = "/opt/ca.pem";
    CHECK(cli::tls_files(options).ca_file == "/opt/ca.pem");
  }
  {
    // A key on the command line goes with the file's certificate.
    cli::GlobalOptions options = options_with(k_file);
    options.store_key = "/opt/k.pem";
    store::TlsFiles files = cli::tls_files(options);
    CHECK(files.cert_file == "/f/c.pem");
    CHECK(files.key_file == "/opt/k.pem");
    CHECK(files.key_given_by == "--store-key");
  }
  // A store named on the command line or in the environment takes nothing from the file.
  cli::GlobalOptions named = options_with(k_file);
  named.store = "rediss://other";
  store::TlsFiles files = cli::tls_files(named);
  CHECK(files.ca_file.empty());
  CHECK(files.cert_file.empty());
  CHECK(files.key_file.empty());
  {
    ScopedEnv store("RATELIMIT_STORE", "rediss://other");
    CHECK(cli::tls_files(options_with(k_file)).ca_file.empty());
  }
  // A key without a certificate anywhere is a usage error.
  cli::GlobalOptions key_only = options_with("[store]\nca = \"/f/ca.pem\"\n");
  key_only.store_key = "/opt/k.pem";
  CHECK_THROWS_AS(cli::tls_files(key_only), cli::UsageError);
}

TEST_CASE("cli::tls_files keeps TLS sessions in the state directory unless "
          "RATELIMIT_TLS_SESSION_CACHE is off") {
  ScopedEnv no_db("RATELIMIT_DB", nullptr);
  ScopedEnv store("RATELIMIT_STORE", "rediss://h");
  ScopedEnv no_setting("RATELIMIT_TLS_SESSION_CACHE", nullptr);
  {
    ScopedEnv state("XDG_STATE_HOME", "/xdg/state");
    store::TlsFiles files = cli::tls_files(options_with(""));
    CHECK(files.session_directory == "/xdg/state/ratelimit/tls-sessions");
    CHECK(files.session_home.empty());
  }
  ScopedEnv no_state("XDG_STATE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/u");
    store::TlsFiles files = cli::tls_files(options_with(""));
    CHECK(files.session_directory == "/home/u/.local/state/ratelimit/tls-sessions");
    CHECK(files.session_home == "/home/u");
    ScopedEnv on("RATELIMIT_TLS_SESSION_CACHE", "on");
    CHECK(cli::tls_files(options_with("")).session_directory ==
          "/home/u/.local/state/ratelimit/tls-sessions");
  }
  {
    // Without a home, none: the decision is made all the same, with a full handshake.
    ScopedEnv no_home("HOME", nullptr);
    CHECK(cli::tls_files(options_with("")).session_directory.empty());
  }
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv off("RATELIMIT_TLS_SESSION_CACHE", "off");
    CHECK(cli::tls_files(options_with("")).session_directory.empty());
  }
  ScopedEnv bad("RATELIMIT_TLS_SESSION_CACHE", "no");
  CHECK_THROWS_WITH_AS(cli::tls_files(options_with("")),
                       "invalid RATELIMIT_TLS_SESSION_CACHE \"no\": expected on or off",
                       cli::UsageError);
}

namespace {

// A temporary directory for configuration files, removed with what it holds.
class TemporaryDirectory {
public:
  TemporaryDirectory() {
    char path[] = "/tmp/ratelimit-config-XXXXXX";
    REQUIRE(::mkdtemp(path) != nullptr);
    m_path = path;
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(m_path); }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  // Writes `text` to `name` in the directory; returns its path.
  std::string write(const std::string& name, std::string_view text) const {
    std::string path = m_path + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }

  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

} // namespace

TEST_CASE("cli::load_config: the first file that names a certificate gives its key too") {
  TemporaryDirectory directory;
  ScopedEnv no_config("RATELIMIT_CONFIG", nullptr);
  ScopedEnv home("XDG_CONFIG_HOME", (directory.path() + "/user").c_str());
  std::string system = directory.write("etc/limits.toml", "[store]\nca = \"system-ca.pem\"\n"
                                                          "cert = \"system.pem\"\n"
                                                          "key = \"system.key\"\n");
  ScopedEnv system_file("RATELIMIT_SYSTEM_CONFIG", system.c_str());
  SUBCASE("a certificate without a key in the first file takes no key from the next") {
    directory.write("user/ratelimit/limits.toml", "[store]\ncert = \"both.pem\"\n");
    cli::Config config = cli::load_config("");
    REQUIRE(config.store_cert);
    CHECK(config.store_cert->path == directory.path() + "/user/ratelimit/both.pem");
    CHECK_FALSE(config.store_key);
    REQUIRE(config.store_ca);
    CHECK(config.store_ca->path == directory.path() + "/etc/system-ca.pem");
  }
  SUBCASE("a first file without a certificate leaves both to the next") {
    directory.write("user/ratelimit/limits.toml", "[store]\nca = \"user-ca.pem\"\n");
    cli::Config config = cli::load_config("");
    CHECK(config.store_ca->path == directory.path() + "/user/ratelimit/user-ca.pem");
    CHECK(config.store_cert->path == directory.path() + "/etc/system.pem");
    REQUIRE(config.store_key);
    CHECK(config.store_key->path == directory.path() + "/etc/system.key");
    CHECK(config.store_key->defined_in == system + ":4");
  }
}
