#pragma once

#include "core/time.hpp"
#include "store/redis_reply.hpp"
#include "store/store_url.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>

struct redisContext;
struct redisReader;

namespace ratelimit::store {

class TlsStream;
class TlsError;

// A blocking connection to one Redis server, over TCP, a Unix socket or TLS. Connecting and
// every command give up after `timeout`; every failure throws StoreError naming the server
// (never the password). On Redis Cluster it follows MOVED and ASK redirections to the node
// that holds the key. Over TLS, hiredis only encodes commands and decodes replies: the bytes
// go through a TlsStream.
class RedisConnection {
public:
  RedisConnection(const RedisLocation& location, core::Nanos timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends `arguments` as one command. An error reply throws StoreError.
  RedisReply command(std::span<const std::string> arguments);

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
  // Connects again (to the server first named): a blocking command given up on leaves its
  // reply pending on the old connection.
  void reconnect();

  // `redis HOST:PORT`, for messages.
  const std::string& name() const { return m_name; }

  [[noreturn]] void fail(std::string_view why) const;

private:
  void connect(const RedisLocation& location);
  void connect_plain(const RedisLocation& location);
  // AUTH and SELECT, as `location` says.
  void authenticate(const RedisLocation& location);
  void close();
  // Sends one command here; nullptr on an I/O failure.
  RedisReply send_here(std::span<const std::string> arguments);
  // Sends one command, following cluster redirections.
  RedisReply send(std::span<const std::string> arguments);
  [[noreturn]] void fail_io() const;
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
};

} // namespace ratelimit::store
