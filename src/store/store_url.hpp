#pragma once

#include "core/result.hpp"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ratelimit::store {

// `sqlite:PATH`: the same as --db PATH.
struct SqliteLocation {
  std::string path;
};

// The files that make a TLS connection trusted, for rediss://. Empty: none given.
struct TlsFiles {
  std::string ca_file;   // --store-ca: the CA that signed the server's certificate (else the
                         // system's CAs)
  std::string cert_file; // --store-cert: a client certificate, for a server that demands one
  std::string key_file;  // --store-key: its private key (else in `cert_file`)
  // Where each file was named, for messages: the option, or a configuration file's line.
  std::string ca_given_by = "--store-ca";
  std::string cert_given_by = "--store-cert";
  std::string key_given_by = "--store-key";
  // Where TLS sessions are kept for the next process to resume (see tls_session_cache.hpp);
  // empty: they are not kept. `session_home`: the home directory it is in, never created.
  std::string session_directory;
  std::string session_home;
  // Whether a TLS relay keeps OpenSSL loaded for the next processes (see tls_relay.hpp), its
  // socket in the session directory.
  bool relay = false;
};

// A server's TCP address.
struct HostPort {
  std::string host;
  int port = 0;

  // `host:port` (IPv6 in brackets).
  std::string address() const;
};

inline constexpr int k_default_sentinel_port = 26379;

// `redis[s]://[[user]:password@]host[:port][/db]`,
// `redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]` or
// `unix://[[user]:password@]/path[?db=N]`.
struct RedisLocation {
  std::string host;
  int port = 6379;
  std::string user;     // empty: the default user
  std::string password; // empty: no AUTH
  int db = 0;
  std::string socket_path; // unix://: the socket's path (then no host and port)
  bool tls = false;        // rediss://
  TlsFiles tls_files;      // not from the URL: --store-ca, --store-cert, --store-key, [store]
  // redis-sentinel://: the sentinels to ask, in order, for the address of `master_name`
  // (then no host and port until they answer). The user and password are the master's:
  // the sentinels are asked without them, and never over TLS.
  std::vector<HostPort> sentinels;
  std::string master_name;

  // `host:port` (IPv6 in brackets) or the socket's path, for messages: never the password.
  std::string address() const;
};

using StoreLocation = std::variant<SqliteLocation, RedisLocation>;

// The accepted forms, for messages.
inline constexpr std::string_view k_store_url_form =
    "redis[s]://[[user]:password@]host[:port][/db], "
    "redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], "
    "unix://[[user]:password@]/path[?db=N] or sqlite:PATH";

// Parses a --store URL. The user and password may be percent-encoded (`%40` for `@`); an
// IPv6 host goes in brackets (`redis://[::1]:6380`); a Unix socket's path is absolute
// (`unix:///run/redis/redis.sock`); a sentinel's port is 26379 unless given. The error names
// the accepted form.
core::Result<StoreLocation> parse_store_url(std::string_view url);

} // namespace ratelimit::store
