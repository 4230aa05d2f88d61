#pragma once

#include "core/result.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace ratelimit::store {

// `sqlite:PATH`: the same as --db PATH.
struct SqliteLocation {
  std::string path;
};

// `redis://[[user]:password@]host[:port][/db]`.
struct RedisLocation {
  std::string host;
  int port = 6379;
  std::string user;     // empty: the default user
  std::string password; // empty: no AUTH
  int db = 0;

  // `host:port` (IPv6 in brackets), for messages: never the password.
  std::string address() const;
};

using StoreLocation = std::variant<SqliteLocation, RedisLocation>;

// The accepted forms, for messages.
inline constexpr std::string_view k_store_url_form =
    "redis://[[user]:password@]host[:port][/db] or sqlite:PATH";

// Parses a --store URL. The user and password may be percent-encoded (`%40` for `@`); an
// IPv6 host goes in brackets (`redis://[::1]:6380`). The error names the accepted form.
core::Result<StoreLocation> parse_store_url(std::string_view url);

} // namespace ratelimit::store
