// RedisConnection connecting again: when the server closed the connection while it was idle
// or it was lost before a command was written whole, and following a failover of the master
// the sentinels name.
#include "store/redis/redis_connection.hpp"

#include "store/redis/redis_connection_lost.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>

namespace ratelimit::store::redis {

namespace {

// Whether `reply` says the server is a replica now: it wrote nothing. Redis 7 passes the
// code of an error inside a script on; older servers wrap it in "ERR Error running script".
bool is_read_only_refusal(const RedisReply& reply) {
  if (!reply.is_error()) {
    return false;
  }
  std::string_view text = reply.text();
  return text.starts_with("READONLY ") || text.find("-READONLY ") != std::string_view::npos;
}

// Commands that only read: one whose reply was lost may be sent again.
bool only_reads(std::span<const std::string> arguments) {
  constexpr std::string_view k_readers[] = {"TIME", "SCAN", "HMGET", "PING"};
  return !arguments.empty() &&
         std::find(std::begin(k_readers), std::end(k_readers), arguments[0]) != std::end(k_readers);
}

} // namespace

bool RedisConnection::gone_while_idle() const {
  if (!m_context && !m_tls) {
    return true;
  }
  if (!m_used) {
    return false; // just made: a plain `try` asks no more
  }
  // Nothing is due on an idle connection: anything readable is its end (or junk).
  pollfd idle{fd(), POLLIN, 0};
  return ::poll(&idle, 1, 0) > 0;
}

RedisReply RedisConnection::send_reconnecting(std::span<const std::string> arguments) {
  if (!gone_while_idle()) {
    try {
      return send_here(arguments);
    } catch (const ConnectionLost& lost) {
      if (lost.delivered()) {
        throw; // it may have run: never sent twice
      }
    }
  }
  connect(m_first_location);
  return send_here(arguments);
}

RedisReply RedisConnection::send_to_master(std::span<const std::string> arguments) {
  // A failover ends the connections to the old master (the sentinels kill them) and makes it
  // a replica that refuses writes (READONLY): then the sentinels are asked again and the
  // command sent once more to the master they name, unless it may already have run.
  if (!gone_while_idle()) {
    try {
      RedisReply reply = send_here(arguments);
      if (!is_read_only_refusal(reply)) {
        return reply;
      }
    } catch (const ConnectionLost& lost) {
      // A decision sent twice would count twice, a give-back would give twice: neither is
      // guessed at.
      if (lost.delivered() && !only_reads(arguments)) {
        throw StoreUnavailable(
            fmt::format("{} after the command was sent: it may have run, so it is "
                        "not sent again",
                        lost.what()));
      }
    }
  }
  connect(m_first_location);
  return send_here(arguments);
}

} // namespace ratelimit::store::redis
