#include "store/redis/redis_keys.hpp"

#include "util/key_text.hpp"

#include <fmt/format.h>

namespace ratelimit::store::redis {

std::string redis_key(std::string_view prefix, std::string_view key) {
  std::string name(prefix);
  name += '{';
  for (char c : key) {
    if (c == '%') {
      name += "%25";
    } else if (c == '}') {
      name += "%7D";
    } else {
      name += c;
    }
  }
  name += '}';
  return name;
}

std::optional<std::string> redis_prefix_problem(std::string_view prefix) {
  if (prefix.find_first_of("{}") == std::string_view::npos) {
    return std::nullopt;
  }
  return fmt::format("invalid Redis key prefix {} (--redis-prefix, $RATELIMIT_REDIS_PREFIX): "
                     "expected one without {{ or }}, e.g. app: (Redis Cluster places the names "
                     "of a key by the braces around the key)",
                     util::printable_key(prefix));
}

namespace {

constexpr std::string_view k_counters_suffix = ":n";

} // namespace

std::string redis_counters_key(std::string_view prefix, std::string_view key) {
  return redis_key(prefix, key) + std::string(k_counters_suffix);
}

std::vector<std::string> redis_keys_of(std::string_view prefix, std::string_view key) {
  std::string base = redis_key(prefix, key);
  return {base, base + ":t", base + ":c", base + std::string(k_counters_suffix)};
}

std::vector<std::string> redis_legacy_log_keys(std::string_view prefix, std::string_view key,
                                               std::int64_t period) {
  std::string base = redis_key(prefix, key);
  // Appended, not `":" + ...`: GCC 12 warns of a false overlap in that operator+.
  std::string suffix = ":";
  suffix += std::to_string(period);
  return {base + ":t" + suffix, base + ":c" + suffix};
}

std::optional<std::string> key_of_redis_name(std::string_view prefix, std::string_view name) {
  if (!name.starts_with(prefix)) {
    return std::nullopt;
  }
  name.remove_prefix(prefix.size());
  if (name.size() < 3 || name.front() != '{' || name.back() != '}') {
    return std::nullopt;
  }
  name = name.substr(1, name.size() - 2);
  std::string key;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '}') {
      return std::nullopt;
    }
    if (name[i] != '%') {
      key += name[i];
    } else if (name.substr(i, 3) == "%25") {
      key += '%';
      i += 2;
    } else if (name.substr(i, 3) == "%7D") {
      key += '}';
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return key;
}

std::optional<std::string> key_of_redis_counters_name(std::string_view prefix,
                                                      std::string_view name) {
  if (!name.ends_with(k_counters_suffix)) {
    return std::nullopt;
  }
  name.remove_suffix(k_counters_suffix.size());
  return key_of_redis_name(prefix, name);
}

std::string redis_scan_pattern(std::string_view prefix) {
  std::string pattern;
  for (char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      pattern += '\\';
    }
    pattern += c;
  }
  return pattern + "{*";
}

} // namespace ratelimit::store::redis
