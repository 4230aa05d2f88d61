#include "cli/config_file.hpp"

#include "cli/usage_error.hpp"
#include "core/algorithm.hpp"
#include "core/limit.hpp"
#include "core/rate.hpp"
#include "util/key_text.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

// Exceptions off: a parse error is a value, like every other parser's here.
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace ratelimit::cli {

namespace {

constexpr const char* k_limit_settings = "rate, algorithm, burst, cost, timeout";

class Reader {
public:
  explicit Reader(const std::string& file) : m_file(file) {}

  std::string where(const toml::node& node) const {
    return fmt::format("{}:{}", m_file, node.source().begin.line);
  }

  // An error at `node`: `FILE:LINE: message`.
  core::Result<Config> error(const toml::node& node, const std::string& message) const {
    return core::Result<Config>::failure(fmt::format("{}: {}", where(node), message));
  }

  // One string, or an array of strings (`many`), into `out`; an error message or nothing.
  std::optional<std::string> strings(const toml::node& node, std::string_view setting, bool many,
                                     std::vector<std::string>& out) const {
    if (const auto* text = node.as_string()) {
      out.push_back(text->get());
      return std::nullopt;
    }
    if (const auto* array = node.as_array(); array != nullptr && many && !array->empty()) {
      for (const toml::node& item : *array) {
        const auto* text = item.as_string();
        if (text == nullptr) {
          return fmt::format("{}: {} takes strings, e.g. {} = [\"10/s\", \"5000/h\"]", where(item),
                             setting, setting);
        }
        out.push_back(text->get());
      }
      return std::nullopt;
    }
    return fmt::format(
        "{}: {} takes {}", where(node), setting,
        many ? fmt::format("a string or an array of strings, e.g. {} = \"10/s\"", setting)
             : fmt::format("a string, e.g. {} = \"...\"", setting));
  }

  // A whole number of at least 1, or an array of them (`many`), as text into `out`.
  std::optional<std::string> numbers(const toml::node& node, std::string_view setting, bool many,
                                     std::vector<std::string>& out) const {
    auto one = [&](const toml::node& item) -> std::optional<std::string> {
      const auto* number = item.as_integer();
      if (number == nullptr || number->get() < 1) {
        return fmt::format("{}: {} takes a whole number of at least 1{}", where(item), setting,
                           many ? fmt::format(" or an array of them, e.g. {} = [5, 100]", setting)
                                : fmt::format(", e.g. {} = 2", setting));
      }
      out.push_back(std::to_string(number->get()));
      return std::nullopt;
    };
    if (const auto* array = node.as_array(); array != nullptr && many) {
      if (array->empty()) {
        return one(node);
      }
      for (const toml::node& item : *array) {
        if (auto problem = one(item)) {
          return problem;
        }
      }
      return std::nullopt;
    }
    return one(node);
  }

  core::Result<Config> limit(Config& config, std::string_view key, const toml::node& node) const {
    // The name as a table header would give it, so that a message stays one line.
    std::string name = table_name(key);
    const auto* table = node.as_table();
    if (table == nullptr) {
      return error(node, fmt::format("limits.{} must be a table: [limits.{}]", name, name));
    }
    if (key.empty()) {
      return error(node, "a limit needs a name: [limits.NAME]");
    }
    NamedLimit limit;
    limit.defined_in = where(node);
    for (auto&& [setting_key, value] : *table) {
      std::string_view setting = setting_key.str();
      std::optional<std::string> problem;
      std::vector<std::string> one;
      if (setting == "rate") {
        problem = strings(value, setting, true, limit.rates);
        for (std::size_t i = 0; !problem && i < limit.rates.size(); ++i) {
          if (auto rate = core::parse_rate(limit.rates[i]); !rate) {
            problem = fmt::format("{}: {}", where(value), rate.error());
          }
        }
      } else if (setting == "algorithm") {
        problem = strings(value, setting, false, one);
        if (!problem) {
          if (auto algorithm = core::parse_algorithm(one[0]); !algorithm) {
            problem = fmt::format("{}: {}", where(value), algorithm.error());
          }
          limit.algorithm = one[0];
        }
      } else if (setting == "burst") {
        problem = numbers(value, setting, true, limit.bursts);
      } else if (setting == "cost") {
        problem = numbers(value, setting, false, one);
        if (!problem) {
          limit.cost = one[0];
        }
      } else if (setting == "timeout") {
        problem = strings(value, setting, false, one);
        if (!problem) {
          if (auto timeout = core::parse_duration(one[0]); !timeout) {
            problem = fmt::format("{}: timeout: {}", where(value), timeout.error());
          }
          limit.timeout = one[0];
        }
      } else {
        problem = fmt::format("{}: unknown setting {} in [limits.{}]; expected one of {}",
                              where(value), util::printable_key(setting), name, k_limit_settings);
      }
      if (problem) {
        return core::Result<Config>::failure(*problem);
      }
    }
    if (limit.rates.empty()) {
      return error(node, fmt::format("[limits.{}] has no rate; expected rate = \"N/PERIOD\", "
                                     "e.g. rate = \"10/s\"",
                                     name));
    }
    if (!limit.bursts.empty() && limit.bursts.size() != 1 &&
        limit.bursts.size() != limit.rates.size()) {
      return error(node, fmt::format("[limits.{}] has {} bursts for {} rates; give one burst "
                                     "for all rates or one per rate",
                                     name, limit.bursts.size(), limit.rates.size()));
    }
    // The limit as a whole, as its options would be checked: a burst for a window algorithm,
    // a cost that could never be granted.
    auto algorithm = core::parse_algorithm(limit.algorithm.value_or("token-bucket"));
    std::vector<core::Limit> limits;
    for (std::size_t i = 0; i < limit.rates.size(); ++i) {
      core::Rate rate = *core::parse_rate(limit.rates[i]);
      core::Limit one_limit{rate, rate.count};
      if (!limit.bursts.empty()) {
        one_limit.burst = std::stoll(limit.bursts[limit.bursts.size() == 1 ? 0 : i]);
      }
      limits.push_back(one_limit);
    }
    std::int64_t cost = limit.cost ? std::stoll(*limit.cost) : 1;
    if (auto problem = core::check_limits(*algorithm, limits, cost, !limit.bursts.empty())) {
      return error(node, fmt::format("[limits.{}]: {}", name, *problem));
    }
    config.limits.emplace(std::string(key), std::move(limit));
    return config;
  }

  core::Result<Config> store(Config& config, const toml::node& node) const {
    const auto* table = node.as_table();
    if (table == nullptr) {
      return error(node, "store must be a table: [store]");
    }
    for (auto&& [key, value] : *table) {
      if (key.str() != "url") {
        return error(value, fmt::format("unknown setting {} in [store]; expected url",
                                        util::printable_key(key.str())));
      }
      const auto* url = value.as_string();
      if (url == nullptr || url->get().empty()) {
        return error(value, "url takes a store URL, e.g. url = \"redis://host:6379/0\"");
      }
      config.store_url = url->get();
    }
    return config;
  }

private:
  const std::string& m_file;
};

std::string config_home() {
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config == '/') {
    return config;
  }
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.config" : std::string();
}

// The whole file, or nothing when it does not exist; throws UsageError when it cannot be read.
std::optional<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return std::nullopt;
    }
    throw UsageError(
        fmt::format("cannot read the configuration file \"{}\": {}", path, std::strerror(errno)));
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      int error = errno;
      ::close(fd);
      throw UsageError(
          fmt::format("cannot read the configuration file \"{}\": {}", path, std::strerror(error)));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

} // namespace

std::string table_name(std::string_view key) {
  bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  return bare ? std::string(key) : util::printable_key(key);
}

core::Result<Config> parse_config(std::string_view text, const std::string& file) {
  toml::parse_result parsed = toml::parse(text, file);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    std::string description(error.description());
    if (!description.empty()) {
      description[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(description[0])));
    }
    return core::Result<Config>::failure(
        fmt::format("{}:{}: {}", file, error.source().begin.line, description));
  }
  Reader reader(file);
  Config config;
  for (auto&& [key, node] : parsed.table()) {
    if (key.str() == "limits") {
      const auto* limits = node.as_table();
      if (limits == nullptr) {
        return reader.error(node, "limits must hold tables: [limits.NAME]");
      }
      for (auto&& [name, limit] : *limits) {
        auto result = reader.limit(config, name.str(), limit);
        if (!result) {
          return result;
        }
      }
    } else if (key.str() == "store") {
      auto result = reader.store(config, node);
      if (!result) {
        return result;
      }
    } else {
      return reader.error(node, fmt::format("unknown table [{}]; expected [limits.NAME] or "
                                            "[store]",
                                            table_name(key.str())));
    }
  }
  return config;
}

std::vector<std::string> config_files(const std::string& explicit_file) {
  if (!explicit_file.empty()) {
    return {explicit_file};
  }
  if (const char* env = std::getenv("RATELIMIT_CONFIG"); env && *env) {
    return {env};
  }
  std::vector<std::string> files;
  if (std::string home = config_home(); !home.empty()) {
    files.push_back(home + "/ratelimit/limits.toml");
  }
  const char* system = std::getenv("RATELIMIT_SYSTEM_CONFIG");
  files.push_back(system && *system ? system : "/etc/ratelimit/limits.toml");
  return files;
}

Config load_config(const std::string& explicit_file) {
  std::vector<std::string> files = config_files(explicit_file);
  const char* env = std::getenv("RATELIMIT_CONFIG");
  bool named = !explicit_file.empty() || (env && *env);
  Config merged;
  for (const std::string& file : files) {
    std::optional<std::string> text = read_file(file);
    if (!text) {
      if (named) {
        throw UsageError(fmt::format("cannot read the configuration file \"{}\": it does not "
                                     "exist",
                                     file));
      }
      continue;
    }
    auto config = parse_config(*text, file);
    if (!config) {
      throw UsageError(config.error());
    }
    // The first file wins: what the merged configuration already has stays.
    for (const auto& [name, limit] : config->limits) {
      merged.limits.emplace(name, limit);
    }
    if (!merged.store_url) {
      merged.store_url = config->store_url;
    }
  }
  return merged;
}

} // namespace ratelimit::cli
