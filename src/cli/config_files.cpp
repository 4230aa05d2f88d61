// Finding the configuration files and merging what they say.
#include "cli/config_file.hpp"

#include "cli/usage_error.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace ratelimit::cli {

namespace {

std::string config_home() {
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config == '/') {
    return config;
  }
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.config" : std::string();
}

// The whole file, or nothing when it does not exist; the error: it cannot be read.
core::Result<std::optional<std::string>> read_file(const std::string& path) {
  using Read = core::Result<std::optional<std::string>>;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return std::optional<std::string>();
    }
    return Read::failure(
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
      return Read::failure(
          fmt::format("cannot read the configuration file \"{}\": {}", path, std::strerror(error)));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return std::optional<std::string>(std::move(text));
}

} // namespace

std::vector<std::string> config_files(const std::string& named_file) {
  if (!named_file.empty()) {
    return {named_file};
  }
  std::vector<std::string> files;
  if (std::string home = config_home(); !home.empty()) {
    files.push_back(home + "/ratelimit/limits.toml");
  }
  const char* system = std::getenv("RATELIMIT_SYSTEM_CONFIG");
  files.push_back(system && *system ? system : "/etc/ratelimit/limits.toml");
  return files;
}

core::Result<Config> load_config(const std::string& named_file) {
  Config merged;
  for (const std::string& file : config_files(named_file)) {
    auto text = read_file(file);
    if (!text) {
      return core::Result<Config>::failure(text.error());
    }
    if (!*text) {
      if (!named_file.empty()) {
        return core::Result<Config>::failure(
            fmt::format("cannot read the configuration file \"{}\": it does not exist", file));
      }
      continue;
    }
    auto config = parse_config(**text, file);
    if (!config) {
      return config;
    }
    // The first file wins: what the merged configuration already has stays.
    for (const auto& [name, limit] : config->limits) {
      merged.limits.emplace(name, limit);
    }
    for (auto setting :
         {&Config::store_url, &Config::store_timeout, &Config::store_on_error, &Config::store_ca}) {
      if (!(merged.*setting)) {
        merged.*setting = (*config).*setting;
      }
    }
    // A key belongs to its certificate: both come from the file that names the certificate.
    if (!merged.store_cert) {
      merged.store_cert = config->store_cert;
      merged.store_key = config->store_key;
    }
  }
  return merged;
}

const core::Result<Config>& ConfigFiles::read() {
  if (!m_config) {
    m_config = load_config(m_named_file);
  }
  return *m_config;
}

const Config& ConfigFiles::config() {
  const core::Result<Config>& config = read();
  if (!config) {
    throw UsageError(config.error());
  }
  return *config;
}

} // namespace ratelimit::cli
