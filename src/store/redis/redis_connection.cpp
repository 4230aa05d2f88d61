#include "store/redis/redis_connection.hpp"

#include "core/rate.hpp"
#include "store/redis/redis_connection_lost.hpp"
#include "store/redis/redis_errors.hpp"
#include "store/redis/redis_sentinel.hpp"
#include "store/store.hpp"
#include "store/tls/tls_stream.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <redis_script.hpp>
#include <vector>

namespace ratelimit::store::redis {

namespace {

timeval to_timeval(core::Nanos duration) {
  return {static_cast<time_t>(duration / core::k_nanos_per_second),
          static_cast<suseconds_t>(duration % core::k_nanos_per_second / core::k_nanos_per_micro)};
}

// Whether hiredis failed because `timeout` passed: an I/O error (its code) whose errno,
// read at once, is ETIMEDOUT or EINPROGRESS (connecting) or EAGAIN (a socket timeout while
// reading or writing).
bool timed_out(int hiredis_error, int system_error) {
  return hiredis_error == REDIS_ERR_IO &&
         (system_error == ETIMEDOUT || system_error == EAGAIN || system_error == EWOULDBLOCK ||
          system_error == EINPROGRESS);
}

} // namespace

RedisConnection::RedisConnection(const RedisLocation& location, core::Nanos timeout)
    : m_first_location(location), m_timeout(timeout) {
  try {
    connect(location);
  } catch (...) {
    // No destructor runs for a constructor that throws: free the failed connection here.
    close();
    throw;
  }
}

void RedisConnection::close() {
  if (m_context) {
    redisFree(m_context);
    m_context = nullptr;
  }
  if (m_reader) {
    redisReaderFree(m_reader);
    m_reader = nullptr;
  }
  m_tls.reset();
  m_used = false;
}

void RedisConnection::close_while_idle() {
  close();
}

void RedisConnection::connect(const RedisLocation& location) {
  if (!location.sentinels.empty()) {
    connect_to_master(location);
    return;
  }
  close();
  m_location = location;
  m_name = "redis " + location.address();
  if (!m_first_location.master_name.empty()) {
    m_name += fmt::format(" (master \"{}\")", m_first_location.master_name);
  }
  if (location.tls) {
    connect_tls(location);
  } else {
    connect_plain(location);
  }
  authenticate(location);
}

void RedisConnection::connect_to_master(const RedisLocation& location) {
  // Through a failover the sentinels may name the old master, a replica by now, for a while:
  // ask them once more.
  for (int attempt = 1;; ++attempt) {
    connect(locate_master(location, m_timeout));
    std::string role[] = {"ROLE"};
    RedisReply reply = send_here(role);
    // A user that may not run ROLE (an ACL without @admin) is left to the sentinels' word: a
    // replica would refuse the first write with READONLY all the same.
    if (reply.is_error() && reply.text().starts_with("NOPERM")) {
      return;
    }
    if (reply.is_error()) {
      fail_reply("ROLE", reply.text());
    }
    if (reply.size() > 0 && RedisReply::text_of(reply.at(0)) == "master") {
      return;
    }
    if (attempt == 2) {
      fail_unavailable(
          fmt::format("the sentinels name it, but it is a {}, not the master (a failover in "
                      "progress?)",
                      reply.size() > 0 ? RedisReply::text_of(reply.at(0)) : "server"));
    }
  }
}

void RedisConnection::connect_plain(const RedisLocation& location) {
  m_context =
      location.socket_path.empty()
          ? redisConnectWithTimeout(location.host.c_str(), location.port, to_timeval(m_timeout))
          : redisConnectUnixWithTimeout(location.socket_path.c_str(), to_timeval(m_timeout));
  int system_error = errno;
  if (!m_context) {
    fail("cannot connect: out of memory");
  }
  if (m_context->err) {
    if (timed_out(m_context->err, system_error)) {
      fail_unavailable(fmt::format("cannot connect within {} (--store-timeout)",
                                   core::format_seconds(m_timeout)));
    }
    fail_unavailable("cannot connect: " + lower_first(m_context->errstr));
  }
  if (redisSetTimeout(m_context, to_timeval(m_timeout)) != REDIS_OK) {
    fail_io();
  }
  // hiredis does not mark its socket close-on-exec: a command that `run -j` starts as a
  // child must not inherit the connection.
  ::fcntl(m_context->fd, F_SETFD, FD_CLOEXEC);
}

void RedisConnection::adopt_socket(int fd) {
  m_context = redisConnectFd(fd);
  if (!m_context) {
    ::close(fd);
    fail("cannot connect: out of memory");
  }
  if (redisSetTimeout(m_context, to_timeval(m_timeout)) != REDIS_OK) {
    fail_io();
  }
}

void RedisConnection::authenticate(const RedisLocation& location) {
  if (!location.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!location.user.empty()) {
      auth.push_back(location.user);
    }
    auth.push_back(location.password);
    command(auth);
  }
  if (location.db != 0) {
    std::string select[] = {"SELECT", std::to_string(location.db)};
    command(select);
  }
}

RedisConnection::~RedisConnection() {
  close();
}

void RedisConnection::fail(std::string_view why) const {
  throw StoreError(fmt::format("{}: {}", m_name, why));
}

void RedisConnection::fail_unavailable(std::string_view why) const {
  throw StoreUnavailable(fmt::format("{}: {}", m_name, why));
}

void RedisConnection::fail_reply(std::string_view command, std::string_view text) const {
  std::string why =
      command.empty() ? error_text(text) : fmt::format("{}: {}", command, error_text(text));
  if (is_unavailable_reply(text)) {
    fail_unavailable(why);
  }
  fail(why);
}

void RedisConnection::fail_io(bool delivered) const {
  int system_error = errno; // of the hiredis call that just failed
  std::string why = lower_first(m_context->errstr);
  if (timed_out(m_context->err, system_error)) {
    why = fmt::format("no answer within {} (--store-timeout)", core::format_seconds(m_timeout));
  } else if (m_context->err == REDIS_ERR_EOF) {
    why = "the server closed the connection";
  }
  throw ConnectionLost(fmt::format("{}: {}", m_name, why), delivered);
}

RedisReply RedisConnection::send(std::span<const std::string> arguments) {
  for (int redirections = 0;; ++redirections) {
    RedisReply reply =
        follows_failover() ? send_to_master(arguments) : send_reconnecting(arguments);
    std::string_view text = reply.is_error() ? reply.text() : std::string_view();
    bool moved = text.starts_with("MOVED ");
    bool ask = text.starts_with("ASK ");
    if ((!moved && !ask) || redirections == 5) {
      return reply;
    }
    // "MOVED 3999 127.0.0.1:6381": the slot lives on that node (for now, with ASK).
    std::string_view address = text.substr(text.rfind(' ') + 1);
    std::size_t colon = address.rfind(':');
    int port = 0;
    std::from_chars(address.data() + colon + 1, address.data() + address.size(), port);
    std::string_view host = address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    connect(location_at(host, port));
    if (ask) {
      std::string asking[] = {"ASKING"};
      command(asking);
    }
  }
}

RedisLocation RedisConnection::location_at(std::string_view host, int port) const {
  RedisLocation node = m_location;
  node.host = host;
  node.port = port;
  // A node named by its address is reached over TCP, even from a Unix socket.
  node.socket_path.clear();
  return node;
}

RedisReply RedisConnection::send_here(std::span<const std::string> arguments) {
  if (m_tls) {
    tls_send(arguments);
    RedisReply reply = tls_read_reply();
    m_used = true;
    return reply;
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string& argument : arguments) {
    argv.push_back(argument.data());
    lengths.push_back(argument.size());
  }
  if (!m_context) {
    fail("not connected");
  }
  // As redisCommandArgv does, in two steps: a failure before the command is written whole
  // is told from one after (see ConnectionLost).
  if (redisAppendCommandArgv(m_context, static_cast<int>(argv.size()), argv.data(),
                             lengths.data()) != REDIS_OK) {
    fail_io(false);
  }
  for (int done = 0; !done;) {
    if (redisBufferWrite(m_context, &done) != REDIS_OK) {
      fail_io(false);
    }
  }
  void* reply = nullptr;
  if (redisGetReply(m_context, &reply) != REDIS_OK || !reply) {
    fail_io(true);
  }
  m_used = true;
  return RedisReply(static_cast<redisReply*>(reply));
}

RedisReply RedisConnection::command(std::span<const std::string> arguments) {
  RedisReply reply = send(arguments);
  if (reply.is_error()) {
    fail_reply(arguments.empty() ? "" : arguments[0], reply.text());
  }
  return reply;
}

RedisReply RedisConnection::command_or_error(std::span<const std::string> arguments) {
  return send(arguments);
}

RedisReply RedisConnection::run_script(std::span<const std::string> keys,
                                       std::span<const std::string> arguments) {
  std::vector<std::string> call{"EVALSHA", k_redis_script_sha1, std::to_string(keys.size())};
  call.insert(call.end(), keys.begin(), keys.end());
  call.insert(call.end(), arguments.begin(), arguments.end());
  RedisReply reply = send(call);
  if (reply.is_error() && reply.text().starts_with("NOSCRIPT")) {
    call[0] = "EVAL";
    call[1] = redis_script();
    reply = send(call);
  }
  if (reply.is_error()) {
    fail_reply("", reply.text());
  }
  return reply;
}

RedisReply RedisConnection::run_source(std::string_view script, std::span<const std::string> keys,
                                       std::span<const std::string> arguments) {
  std::vector<std::string> call{"EVAL", std::string(script), std::to_string(keys.size())};
  call.insert(call.end(), keys.begin(), keys.end());
  call.insert(call.end(), arguments.begin(), arguments.end());
  RedisReply reply = send(call);
  if (reply.is_error()) {
    fail_reply("", reply.text());
  }
  return reply;
}

void RedisConnection::send_only(std::span<const std::string> arguments) {
  if (gone_while_idle()) {
    connect(m_first_location);
  }
  m_used = true;
  if (m_tls) {
    tls_send(arguments);
    return;
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string& argument : arguments) {
    argv.push_back(argument.data());
    lengths.push_back(argument.size());
  }
  if (redisAppendCommandArgv(m_context, static_cast<int>(argv.size()), argv.data(),
                             lengths.data()) != REDIS_OK) {
    fail_io();
  }
  int done = 0;
  while (!done) {
    if (redisBufferWrite(m_context, &done) != REDIS_OK) {
      fail_io();
    }
  }
}

RedisReply RedisConnection::read_reply() {
  if (m_tls) {
    return tls_read_reply();
  }
  void* reply = nullptr;
  if (redisGetReply(m_context, &reply) != REDIS_OK || !reply) {
    fail_io();
  }
  return RedisReply(static_cast<redisReply*>(reply));
}

int RedisConnection::fd() const {
  return m_tls ? m_tls->fd() : m_context->fd;
}

bool RedisConnection::reply_buffered() const {
  const redisReader* reader = m_tls ? m_reader : m_context->reader;
  return (m_tls && m_tls->pending()) || (reader && reader->pos < reader->len);
}

void RedisConnection::reconnect() {
  connect(m_first_location);
}

} // namespace ratelimit::store::redis
