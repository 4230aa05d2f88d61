#pragma once

#include "core/time.hpp"
#include "store/redis/redis_reply.hpp"
#include "store/store_url.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>

struct redisContext;
struct redisReader;

namespace ratelimit::store::tls {
class TlsStream;
class TlsError;
} // namespace ratelimit::store::tls

namespace ratelimit::store::redis {

using tls::TlsError;
using tls::TlsStream;

// A blocking connection to one Redis server, over TCP, a Unix socket or TLS. Connecting and
// every command give up after `timeout`; every failure throws StoreError naming the server
// (never the password), StoreUnavailable for an outage (see store.hpp). On Redis Cluster it
// follows MOVED and ASK redirections to the node that holds the key. Over TLS, hiredis only
// encodes commands and decodes replies: the bytes go through a TlsStream.
//
// A connection that the server closed while it was idle (its `timeout`, a restart, a proxy),
// or lost before a command was written whole, is made again once and the command sent
// again: the server cannot have run it. One whose reply was lost after the command was sent
// is not: a decision may have run, and running it twice would count it twice. After
// `close_while_idle` the next command connects again.
//
// With sentinels (redis-sentinel://) it connects to the master they name, checked with ROLE,
// and follows a failover: a connection found closed before a command, or lost before the
// command was written whole, or a READONLY refusal (the node is a replica now) makes it ask
// the sentinels again and send the command once more to the master they name. A command
// whose reply was lost after it was sent is not sent again, unless it only reads.
class RedisConnection {
public:
  RedisConnection(const RedisLocation& location, core::Nanos timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends `arguments` as one command. An error reply throws StoreError.
  RedisReply command(std::span<const std::string> arguments);
  // The same, returning an error reply rather than throwing it (I/O failures still throw).
  RedisReply command_or_error(std::span<const std::string> arguments);

  // Runs the embedded Lua script with EVALSHA, sending it with EVAL when the server does
  // not know it yet (NOSCRIPT). An error reply throws StoreError.
  RedisReply run_script(std::span<const std::string> keys, std::span<const std::string> arguments);

  // Runs `script` (Lua source) with EVAL: for the scripts that are not the embedded one.
  RedisReply run_source(std::string_view script, std::span<const std::string> keys,
                        std::span<const std::string> arguments);

  // Sends `arguments` without reading the reply, for a blocking command (BLPOP) whose reply
  // the caller awaits on `fd` with poll(2), then reads with `read_reply`. Throws StoreError.
  void send_only(std::span<const std::string> arguments);
  // Reads one reply; an error reply is returned, not thrown.
  RedisReply read_reply();
  // The connection's socket.
  int fd() const;
  // Whether a reply may already have been received and buffered (by TLS or the reply
  // reader): then poll(2) on `fd` would not see it, and `read_reply` need not wait.
  bool reply_buffered() const;
  // Connects again (to the server first named, or the master the sentinels name now): a
  // blocking command given up on leaves its reply pending on the old connection.
  void reconnect();

  // Closes the connection while its owner sleeps for long, rather than hold it open idle
  // (a server or a proxy may end it meanwhile, and a hundred sleeping waiters would hold a
  // hundred); the next command connects again.
  void close_while_idle();

  // Whether the master is found through sentinels (and so may move).
  bool follows_failover() const { return !m_first_location.sentinels.empty(); }

  // `redis HOST:PORT`, for messages.
  const std::string& name() const { return m_name; }

  // The location of the server connected to now, and one at `host`:`port` with the same
  // user, password, database and TLS files (another node of a Redis Cluster).
  const RedisLocation& location() const { return m_location; }
  RedisLocation location_at(std::string_view host, int port) const;
  core::Nanos timeout() const { return m_timeout; }

  [[noreturn]] void fail(std::string_view why) const;
  // The same for an outage: the server cannot be reached or stopped answering.
  [[noreturn]] void fail_unavailable(std::string_view why) const;

private:
  void connect(const RedisLocation& location);
  // Asks the sentinels of `location` where the master is and connects to it.
  void connect_to_master(const RedisLocation& location);
  void connect_plain(const RedisLocation& location);
  // Over TLS: through the TLS relay when one runs (see tls_relay.hpp), else by itself, and
  // then starts one.
  void connect_tls(const RedisLocation& location);
  // Speaks plain RESP on `fd`, a connected socket (close-on-exec).
  void adopt_socket(int fd);
  // AUTH and SELECT, as `location` says.
  void authenticate(const RedisLocation& location);
  void close();
  // Throws the StoreError for the error reply `text` to `command` (empty: not named),
  // StoreUnavailable when it says the server cannot serve now.
  [[noreturn]] void fail_reply(std::string_view command, std::string_view text) const;
  // Sends one command here; nullptr on an I/O failure.
  RedisReply send_here(std::span<const std::string> arguments);
  // Sends one command, following cluster redirections.
  RedisReply send(std::span<const std::string> arguments);
  // Sends one command, connecting again once when the connection is gone (see above).
  RedisReply send_reconnecting(std::span<const std::string> arguments);
  // Sends one command to the sentinels' master, following a failover (see above).
  RedisReply send_to_master(std::span<const std::string> arguments);
  // Whether there is no connection, or the server closed it (or sent something unasked)
  // while it was idle since its last command.
  bool gone_while_idle() const;
  // Throws the StoreError for an I/O failure: `delivered` if the whole command had been
  // written.
  [[noreturn]] void fail_io(bool delivered = true) const;
  // Over TLS: sends `arguments` as one command; reads one reply.
  void tls_send(std::span<const std::string> arguments);
  RedisReply tls_read_reply();
  [[noreturn]] void fail_tls(const TlsError& error, bool connecting) const;

  RedisLocation m_location;
  RedisLocation m_first_location;
  std::string m_name;
  core::Nanos m_timeout;
  redisContext* m_context = nullptr;
  // Over TLS instead of m_context.
  std::unique_ptr<TlsStream> m_tls;
  redisReader* m_reader = nullptr;
  // Whether a command went over this connection since it was made: only then can it have
  // been idle long enough to be closed by the server.
  bool m_used = false;
};

} // namespace ratelimit::store::redis
