#include "store/store_url.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <optional>

namespace ratelimit::store {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// `%XX` escapes decoded; nothing when one is malformed.
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    int high = hex_digit(text[i + 1]);
    int low = hex_digit(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// A whole decimal number in [low, high]; nothing otherwise.
std::optional<int> parse_number(std::string_view text, int low, int high) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low ||
      value > high) {
    return std::nullopt;
  }
  return value;
}

bool is_host_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

// A host name or IPv4 address: letters, digits, '-', '.' and '_'.
bool is_host_name(std::string_view host) {
  return std::all_of(host.begin(), host.end(), is_host_name_char);
}

// What goes between the brackets: hex digits and ':', an IPv4 tail's '.', at least one ':'.
bool is_ipv6_address(std::string_view host) {
  return host.find(':') != std::string_view::npos &&
         std::all_of(host.begin(), host.end(),
                     [](char c) { return hex_digit(c) >= 0 || c == ':' || c == '.'; });
}

} // namespace

std::string HostPort::address() const {
  if (host.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", host, port);
  }
  return fmt::format("{}:{}", host, port);
}

std::string RedisLocation::address() const {
  if (!socket_path.empty()) {
    return socket_path;
  }
  if (host.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", host, port);
  }
  return fmt::format("{}:{}", host, port);
}

namespace {

using Failure = std::optional<std::string>;

// `[user]:password` or `user` (its password given elsewhere), percent-escaped, into
// `location`; what is wrong otherwise.
Failure parse_userinfo(std::string_view userinfo, RedisLocation& location) {
  std::size_t colon = userinfo.find(':');
  if (colon == std::string_view::npos) {
    auto user = percent_decode(userinfo);
    if (!user || user->empty()) {
      return !user ? "bad %-escape in the user" : "no ':' before the password";
    }
    location.user = *user;
    return std::nullopt;
  }
  auto user = percent_decode(userinfo.substr(0, colon));
  auto password = percent_decode(userinfo.substr(colon + 1));
  if (!user || !password) {
    return "bad %-escape in the password";
  }
  if (password->empty()) {
    return "empty password";
  }
  location.user = *user;
  location.password = *password;
  return std::nullopt;
}

// `unix://[[user]:password@]/path[?db=N]`, after the scheme.
Failure parse_unix(std::string_view rest, RedisLocation& location) {
  std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return "no path to the socket (an absolute path: unix:///run/redis/redis.sock)";
  }
  std::string_view authority = rest.substr(0, slash);
  if (!authority.empty()) {
    if (!authority.ends_with('@')) {
      return "a host before the socket's path (unix:// takes only a path: "
             "unix:///run/redis/redis.sock)";
    }
    if (auto failure = parse_userinfo(authority.substr(0, authority.size() - 1), location)) {
      return failure;
    }
  }
  std::string_view path = rest.substr(slash);
  std::size_t question = path.find('?');
  if (question != std::string_view::npos) {
    std::string_view query = path.substr(question + 1);
    path = path.substr(0, question);
    constexpr std::string_view k_db = "db=";
    if (!query.starts_with(k_db)) {
      return "the only query is ?db=N";
    }
    auto db = parse_number(query.substr(k_db.size()), 0, 1'000'000);
    if (!db) {
      return "the database is not a whole number";
    }
    location.db = *db;
  }
  if (path.size() < 2) {
    return "no path to the socket";
  }
  auto decoded = percent_decode(path);
  if (!decoded) {
    return "bad %-escape in the path";
  }
  location.socket_path = *decoded;
  return std::nullopt;
}

// `host[:port]` (an IPv6 host in brackets) into `host` and `port`, which keeps its default
// when none is given; what is wrong otherwise.
Failure parse_host_port(std::string_view authority, std::string& host, int& port) {
  std::string_view port_text;
  bool bracketed = authority.starts_with('[');
  if (bracketed) {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return "no ']' after the IPv6 address";
    }
    host = std::string(authority.substr(1, close - 1));
    if (!host.empty() && !is_ipv6_address(host)) {
      return fmt::format("invalid IPv6 address \"{}\"", host.substr(0, 100));
    }
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) {
      return "unexpected text after the IPv6 address";
    }
    port_text = after.empty() ? after : after.substr(1);
    if (after == ":") {
      return "empty port";
    }
  } else {
    std::size_t colon = authority.find(':');
    host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) {
        return "empty port";
      }
    }
  }
  if (host.empty()) {
    return "no host";
  }
  // Anything else (a query, a fragment, a space) would only be taken for a host that no
  // resolver knows, and found out later as a store error.
  if (!bracketed && !is_host_name(host)) {
    return fmt::format("invalid host \"{}\" (letters, digits, '-', '.' and '_', or an "
                       "IPv6 address in brackets)",
                       host.substr(0, 100));
  }
  if (!port_text.empty()) {
    auto number = parse_number(port_text, 1, 65535);
    if (!number) {
      return "the port is not a number from 1 to 65535";
    }
    port = *number;
  }
  return std::nullopt;
}

// The userinfo before the last '@' of `authority`, if any, into `location`; `authority`
// keeps what follows it.
Failure take_userinfo(std::string_view& authority, RedisLocation& location) {
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    if (auto failure = parse_userinfo(authority.substr(0, at), location)) {
      return failure;
    }
    authority.remove_prefix(at + 1);
  }
  return std::nullopt;
}

// A database number after the path's '/', if any (empty: 0).
Failure parse_db(std::string_view text, RedisLocation& location) {
  if (text.empty()) {
    return std::nullopt;
  }
  auto db = parse_number(text, 0, 1'000'000);
  if (!db) {
    return "the database is not a whole number";
  }
  location.db = *db;
  return std::nullopt;
}

// `redis://` or `rediss://` after the scheme: `[[user]:password@]host[:port][/db]`.
Failure parse_tcp(std::string_view rest, RedisLocation& location) {
  // The authority ends at the first '/'; the userinfo at its last '@'.
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (auto failure = take_userinfo(authority, location)) {
    return failure;
  }
  if (auto failure = parse_host_port(authority, location.host, location.port)) {
    return failure;
  }
  return slash == std::string_view::npos ? std::nullopt
                                         : parse_db(rest.substr(slash + 1), location);
}

// `redis-sentinel://` after the scheme:
// `[[user]:password@]host[:port][,host[:port]...]/master[/db]`.
Failure parse_sentinel(std::string_view rest, RedisLocation& location) {
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (auto failure = take_userinfo(authority, location)) {
    return failure;
  }
  for (;;) {
    std::size_t comma = authority.find(',');
    HostPort sentinel{"", k_default_sentinel_port};
    if (auto failure = parse_host_port(authority.substr(0, comma), sentinel.host, sentinel.port)) {
      return location.sentinels.empty()
                 ? *failure
                 : fmt::format("sentinel {}: {}", location.sentinels.size() + 1, *failure);
    }
    location.sentinels.push_back(std::move(sentinel));
    if (comma == std::string_view::npos) {
      break;
    }
    authority.remove_prefix(comma + 1);
  }
  if (slash == std::string_view::npos) {
    return "no master name after the sentinels (/mymaster)";
  }
  std::string_view path = rest.substr(slash + 1);
  if (path.find_first_of("?#") != std::string_view::npos) {
    return "a '?' or '#' after the master name (%-escape it if the name has one)";
  }
  std::size_t second = path.find('/');
  auto name = percent_decode(path.substr(0, second));
  if (!name) {
    return "bad %-escape in the master name";
  }
  if (name->empty()) {
    return "no master name after the sentinels (/mymaster)";
  }
  if (std::any_of(name->begin(), name->end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return "a space or control character in the master name";
  }
  location.master_name = *name;
  return second == std::string_view::npos ? std::nullopt
                                          : parse_db(path.substr(second + 1), location);
}

} // namespace

core::Result<StoreLocation> parse_store_url(std::string_view url) {
  auto fail = [&](std::string_view why) {
    return core::Result<StoreLocation>::failure(fmt::format(
        "invalid store \"{}\": {}; expected {}", url.substr(0, 200), why, k_store_url_form));
  };
  constexpr std::string_view k_sqlite = "sqlite:";
  constexpr std::string_view k_redis = "redis://";
  constexpr std::string_view k_rediss = "rediss://";
  constexpr std::string_view k_unix = "unix://";
  constexpr std::string_view k_sentinel = "redis-sentinel://";
  if (url.starts_with(k_sqlite)) {
    std::string_view path = url.substr(k_sqlite.size());
    if (path.empty()) {
      return fail("no path after sqlite:");
    }
    return StoreLocation{SqliteLocation{std::string(path)}};
  }
  RedisLocation location;
  Failure failure;
  if (url.starts_with(k_redis)) {
    failure = parse_tcp(url.substr(k_redis.size()), location);
  } else if (url.starts_with(k_rediss)) {
    location.tls = true;
    failure = parse_tcp(url.substr(k_rediss.size()), location);
  } else if (url.starts_with(k_sentinel)) {
    failure = parse_sentinel(url.substr(k_sentinel.size()), location);
  } else if (url.starts_with(k_unix)) {
    failure = parse_unix(url.substr(k_unix.size()), location);
  } else {
    return fail("unknown scheme");
  }
  if (failure) {
    return fail(*failure);
  }
  return StoreLocation{location};
}

} // namespace ratelimit::store
