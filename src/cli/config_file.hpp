#pragma once

#include "core/result.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
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
};

// How a TOML table header names `key`: bare when it may be, else quoted and escaped.
std::string table_name(std::string_view key);

// A path that a configuration file gives: relative to the file's directory when relative
// there (made so by the reader), and where it was given.
struct ConfigPath {
  std::string path;
  std::string defined_in; // FILE:LINE, for messages
};

// What the configuration files say.
struct Config {
  std::map<std::string, NamedLimit, std::less<>> limits;
  // [store]: where keys live, when neither the command line nor the environment says (`url`),
  // and then how long to wait for it (`timeout`, as --store-timeout) and what to do when it
  // fails (`on_error`, deny, allow or local, as --on-store-error). Checked as their options are.
  std::optional<std::string> store_url;
  std::optional<std::string> store_timeout;
  std::optional<std::string> store_on_error;
  // [store] ca, cert, key: the TLS files of a rediss:// store, as --store-ca, --store-cert,
  // --store-key. A key comes with its certificate, from the same file.
  std::optional<ConfigPath> store_ca;
  std::optional<ConfigPath> store_cert;
  std::optional<ConfigPath> store_key;
};

// Parses the text of one configuration file called `file` (TOML):
//   [limits.NAME]  rate = "10/s" | ["10/s", "5000/h"], algorithm = "...",
//                  burst = N | [N, ...], cost = N, timeout = "30s"
//   [store]        url = "redis://..." | "sqlite:PATH", timeout = "2s",
//                  on_error = "deny" | "allow" | "local", ca = "PATH", cert = "PATH", key = "PATH"
// A relative PATH is taken relative to the directory of `file`. Every value is checked as its
// option would be. An error reads `FILE:LINE: what is wrong`.
core::Result<Config> parse_config(std::string_view text, const std::string& file);

// The files to read, the one that wins first: `explicit_file` (--config) alone, else
// $RATELIMIT_CONFIG alone, else $XDG_CONFIG_HOME/ratelimit/limits.toml
// (~/.config/ratelimit/limits.toml) and then the system's, /etc/ratelimit/limits.toml
// ($RATELIMIT_SYSTEM_CONFIG).
std::vector<std::string> config_files(const std::string& explicit_file);

// Reads and merges `config_files(explicit_file)`: for a name or setting that several files
// define, the first file wins. A file that does not exist is skipped, unless it was named
// (--config, $RATELIMIT_CONFIG). Throws UsageError for a file that cannot be read or parsed.
Config load_config(const std::string& explicit_file);

} // namespace ratelimit::cli
