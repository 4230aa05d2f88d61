#pragma once

#include "core/time.hpp"
#include "store/store_url.hpp"
#include "store/tls/tls_stream.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace ratelimit::store::tls {

// A TLS relay: a process that keeps OpenSSL loaded for the rediss:// decisions of one user,
// so that each of them, a process of its own, need not load and start it (which costs more
// than the decision). It listens on a Unix socket in the TLS session directory (mode 0700),
// one socket per server and set of TLS files. A child process of the relay, connected ahead
// to the server as the decision would have connected (the same TlsStream: the certificate
// verified as configured, the saved session resumed), takes each connection and carries its
// bytes both ways, the decision speaking plain RESP on the socket.
// The first rediss:// decision that finds no relay connects by itself, then starts one; a
// relay exits after a minute without a connection, or at once when its socket is removed or
// replaced.
//
// What a relay and a decision say before the RESP bytes: the decision sends one line,
// `k_relay_greeting TIMEOUT_NS`; the relay answers "+" once connected and sure the server
// answers, else "-KIND MESSAGE" (the TlsError it met, as a decision would have met it), each
// on a line.
inline constexpr std::string_view k_relay_greeting = "ratelimit-tls-relay 1";

// How a relay names the kind of a TlsError in its answer: timeout, unreachable, closed, other.
std::string relay_kind_name(TlsError::Kind kind);

// What identifies a relay: the server, the TLS files and the environment that decides
// which CAs OpenSSL trusts without a CA file.
struct RelayTarget {
  std::string host;
  int port = 0;
  TlsFiles files;
};

// Where a relay listens: `name` in `directory`, reached through a descriptor of the
// directory (/proc/self/fd/N/NAME), so that a long directory path does not matter.
struct RelaySocket {
  std::string directory;
  std::string name;
};

// The relay's socket for `target`: `relay-HASH.sock` in the session directory; nullopt when
// no relay is wanted (RATELIMIT_TLS_RELAY=off, or sessions not kept).
std::optional<RelaySocket> relay_socket(const RelayTarget& target);

// Connects to the relay at `socket`: the connected socket, speaking RESP, once the relay has
// connected to the server; nullopt when there is no relay to use (none listening, one that
// is not this user's, a socket or directory that others could have made). Throws the
// TlsError the relay met connecting to the server, or TlsError::Kind::timeout when it has
// not answered within `timeout`.
std::optional<int> connect_to_relay(const RelaySocket& socket, core::Nanos timeout);

// Starts a relay for `target` on `socket`, in the background, detached from this process
// (its own session, no descriptor of this one): returns at once. Call it after a TLS
// connection to the target succeeded, OpenSSL loaded. The relay connects ahead of any
// decision with `timeout`.
void start_relay(const RelaySocket& socket, const RelayTarget& target, core::Nanos timeout);

// The relay's own work (see tls_relay_process.cpp): serves on `socket` until idle, then
// exits the process. Never returns.

// The path to bind or connect to for `name` in the directory open as `directory_fd`.
std::string socket_path_through(int directory_fd, const std::string& name);

// Whether the process at the other end of the Unix socket `fd` runs as this user.
bool peer_is_this_user(int fd);

// The line, without its newline, that comes on `fd` within `timeout`; the side that sent it
// sends nothing more before an answer, so whatever has come is that line or its beginning.
// Nullopt when the other side closed first or sent too long a line, or, with `timed_out` set,
// when the time ran out.
std::optional<std::string> read_relay_line(int fd, core::Nanos timeout, bool& timed_out);
[[noreturn]] void run_relay(const RelaySocket& socket, const RelayTarget& target,
                            core::Nanos timeout);

} // namespace ratelimit::store::tls
