#pragma once

#include "core/result.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ratelimit::cli {

// A limit defined once, by name, in a configuration file: what its options would say on the
// command line, already checked.
struct NamedLimit {
  std::string defined_in; // FILE:LINE, for messages
  std::vector<std::string> rates;
  std::optional<std::string> algorithm;
  std::vector<std::string> bursts;
  std::optional<std::string> cost;
  std::optional<std::string> timeout;
  bool adaptive = false;
};

// How a TOML table header names `key`: bare when it may be, else quoted and escaped.
std::string table_name(std::string_view key);

// A setting of [store] as a configuration file gives it, and where. A path is relative to the
// file's directory when relative there (made so by the reader).
struct ConfigValue {
  std::string text;
  std::string defined_in; // FILE:LINE, for messages
};

// What the configuration files say.
struct Config {
  std::map<std::string, NamedLimit, std::less<>> limits;
  // [store]: where keys live, when neither the command line nor the environment says (`url`),
  // and then how long to wait for it (`timeout`, as --store-timeout) and what to do when it
  // fails (`on_error`, deny, allow or local, as --on-store-error). Checked as their options are.
  std::optional<ConfigValue> store_url;
  std::optional<ConfigValue> store_timeout;
  std::optional<ConfigValue> store_on_error;
  // [store] ca, cert, key: the TLS files of a rediss:// store, as --store-ca, --store-cert,
  // --store-key. A key comes with its certificate, from the same file.
  std::optional<ConfigValue> store_ca;
  std::optional<ConfigValue> store_cert;
  std::optional<ConfigValue> store_key;
};

// Parses the text of one configuration file called `file` (TOML):
//   [limits.NAME]  rate = "10/s" | ["10/s", "5000/h"], algorithm = "...",
//                  burst = N | [N, ...], cost = N, timeout = "30s"
//   [store]        url = "redis://..." | "sqlite:PATH", timeout = "2s",
//                  on_error = "deny" | "allow" | "local", ca = "PATH", cert = "PATH", key = "PATH"
// A relative PATH is taken relative to the directory of `file`. Every value is checked as its
// option would be. An error reads `FILE:LINE: what is wrong`.
core::Result<Config> parse_config(std::string_view text, const std::string& file);

// The files to read, the one that wins first: `named_file` (--config, else $RATELIMIT_CONFIG)
// alone, else $XDG_CONFIG_HOME/ratelimit/limits.toml (~/.config/ratelimit/limits.toml) and
// then the system's, /etc/ratelimit/limits.toml ($RATELIMIT_SYSTEM_CONFIG).
std::vector<std::string> config_files(const std::string& named_file);

// Reads and merges `config_files(named_file)`: for a name or setting that several files
// define, the first file wins. A file that does not exist is skipped, unless it was named.
// The error: a file that cannot be read or parsed.
core::Result<Config> load_config(const std::string& named_file);

// The configuration files of one invocation, read at the first call that needs what they say
// (a command given every rate and its store reads none), and only once.
class ConfigFiles {
public:
  // `named_file`: --config, else $RATELIMIT_CONFIG; empty: the default places.
  explicit ConfigFiles(std::string named_file) : m_named_file(std::move(named_file)) {}

  // What the files say, or why they cannot be read.
  const core::Result<Config>& read();
  // The same; throws UsageError for files that cannot be read.
  const Config& config();
  // The files read, the one that wins first (see config_files).
  std::vector<std::string> files() const { return config_files(m_named_file); }

private:
  std::string m_named_file;
  std::optional<core::Result<Config>> m_config;
};

} // namespace ratelimit::cli
