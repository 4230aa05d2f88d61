#include "cli/config_file.hpp"

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
  CHECK(parsed.store_url->text == "redis://localhost:6379/0");
  CHECK(parsed.store_url->defined_in == "limits.toml:13");
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
        "algorithm, burst, cost, timeout, adaptive");
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
  CHECK(parsed.store_url->text == "redis://h");
  CHECK(parsed.store_timeout->text == "2.5s");
  CHECK(parsed.store_timeout->defined_in == "limits.toml:3");
  CHECK(parsed.store_on_error->text == "allow");
  // Each alone: the url may come from the command line.
  CHECK(config("[store]\non_error = \"deny\"\n").store_on_error->text == "deny");
  CHECK(config("[store]\non_error = \"local\"\n").store_on_error->text == "local");
  CHECK_FALSE(config("[store]\non_error = \"deny\"\n").store_timeout);
  CHECK(config("[store]\ntimeout = \"300ms\"\n").store_timeout->text == "300ms");
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

TEST_CASE("cli::parse_config reads the store's TLS files, relative ones from the file's "
          "directory") {
  auto parsed = parse_config("[store]\nurl = \"rediss://h\"\nca = \"ca.pem\"\n"
                             "cert = \"/etc/ssl/client.pem\"\nkey = \"keys/client.key\"\n",
                             "/etc/ratelimit/limits.toml");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->store_ca);
  CHECK(parsed->store_ca->text == "/etc/ratelimit/ca.pem");
  CHECK(parsed->store_ca->defined_in == "/etc/ratelimit/limits.toml:3");
  REQUIRE(parsed->store_cert);
  CHECK(parsed->store_cert->text == "/etc/ssl/client.pem");
  REQUIRE(parsed->store_key);
  CHECK(parsed->store_key->text == "/etc/ratelimit/keys/client.key");
  CHECK(parsed->store_key->defined_in == "/etc/ratelimit/limits.toml:5");
  // A file named without a directory: its directory is the current one.
  CHECK(config("[store]\nca = \"ca.pem\"\n").store_ca->text == "ca.pem");
  CHECK(parse_config("[store]\nca = \"../ca.pem\"\n", "conf/limits.toml")->store_ca->text ==
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
    cli::Config config = *cli::load_config("");
    REQUIRE(config.store_cert);
    CHECK(config.store_cert->text == directory.path() + "/user/ratelimit/both.pem");
    CHECK_FALSE(config.store_key);
    REQUIRE(config.store_ca);
    CHECK(config.store_ca->text == directory.path() + "/etc/system-ca.pem");
  }
  SUBCASE("a first file without a certificate leaves both to the next") {
    directory.write("user/ratelimit/limits.toml", "[store]\nca = \"user-ca.pem\"\n");
    cli::Config config = *cli::load_config("");
    CHECK(config.store_ca->text == directory.path() + "/user/ratelimit/user-ca.pem");
    CHECK(config.store_cert->text == directory.path() + "/etc/system.pem");
    REQUIRE(config.store_key);
    CHECK(config.store_key->text == directory.path() + "/etc/system.key");
    CHECK(config.store_key->defined_in == system + ":4");
  }
}

TEST_CASE("cli::load_config: a file named that does not exist is an error, a default one is "
          "skipped") {
  TemporaryDirectory directory;
  std::string missing = directory.path() + "/none.toml";
  auto named = cli::load_config(missing);
  REQUIRE_FALSE(named.ok());
  CHECK(named.error() ==
        "cannot read the configuration file \"" + missing + "\": it does not exist");
  ScopedEnv home("XDG_CONFIG_HOME", (directory.path() + "/user").c_str());
  ScopedEnv system_file("RATELIMIT_SYSTEM_CONFIG", missing.c_str());
  auto defaults = cli::load_config("");
  REQUIRE(defaults.ok());
  CHECK(defaults->limits.empty());
  std::string broken = directory.write("broken.toml", "[store\n");
  auto unreadable = cli::load_config(broken);
  REQUIRE_FALSE(unreadable.ok());
  CHECK(unreadable.error().starts_with(broken + ":1: "));
}

TEST_CASE("cli::ConfigFiles reads the files once, at the first call") {
  TemporaryDirectory directory;
  std::string file = directory.write("limits.toml", "[limits.api]\nrate = \"5/s\"\n");
  cli::ConfigFiles files(file);
  CHECK(files.files() == std::vector<std::string>{file});
  CHECK(files.config().limits.count("api") == 1);
  directory.write("limits.toml", "[limits.other]\nrate = \"5/s\"\n");
  CHECK(files.config().limits.count("api") == 1);
  cli::ConfigFiles missing(directory.path() + "/none.toml");
  CHECK_FALSE(missing.read().ok());
  CHECK_THROWS_AS(missing.config(), cli::UsageError);
}
