// RedisConnection over TLS: hiredis encodes commands and decodes replies, a TlsStream
// carries the bytes.
#include "store/redis/redis_connection.hpp"

#include "core/rate.hpp"
#include "store/tls/tls_relay.hpp"
#include "store/tls/tls_stream.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <memory>
#include <optional>
#include <vector>

namespace ratelimit::store::redis {

void RedisConnection::fail_tls(const TlsError& error, bool connecting) const {
  switch (error.kind()) {
  case TlsError::Kind::timeout:
    fail_unavailable(fmt::format("{} within {} (--store-timeout)",
                                 connecting ? "cannot connect" : "no answer",
                                 core::format_seconds(m_timeout)));
  case TlsError::Kind::unreachable:
  case TlsError::Kind::closed:
    fail_unavailable(error.what());
  case TlsError::Kind::other:
    break;
  }
  fail(error.what());
}

void RedisConnection::connect_tls(const RedisLocation& location) {
  tls::RelayTarget target{location.host, location.port, location.tls_files};
  std::optional<tls::RelaySocket> relay = tls::relay_socket(target);
  try {
    if (relay) {
      if (std::optional<int> fd = tls::connect_to_relay(*relay, m_timeout)) {
        adopt_socket(*fd);
        return;
      }
    }
    m_tls =
        std::make_unique<TlsStream>(location.host, location.port, location.tls_files, m_timeout);
  } catch (const TlsError& error) {
    fail_tls(error, true);
  }
  m_reader = redisReaderCreate();
  if (!m_reader) {
    fail("cannot connect: out of memory");
  }
  if (relay) {
    tls::start_relay(*relay, target, m_timeout);
  }
}

void RedisConnection::tls_send(std::span<const std::string> arguments) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string& argument : arguments) {
    argv.push_back(argument.data());
    lengths.push_back(argument.size());
  }
  char* command = nullptr;
  int length =
      redisFormatCommandArgv(&command, static_cast<int>(argv.size()), argv.data(), lengths.data());
  if (length < 0) {
    fail("out of memory");
  }
  std::unique_ptr<char, void (*)(char*)> owned(command, redisFreeCommand);
  try {
    m_tls->write({command, static_cast<std::size_t>(length)});
  } catch (const TlsError& error) {
    fail_tls(error, false);
  }
}

RedisReply RedisConnection::tls_read_reply() {
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(m_reader, &reply) != REDIS_OK) {
      fail(fmt::format("protocol error: {}", m_reader->errstr));
    }
    if (reply) {
      return RedisReply(static_cast<redisReply*>(reply));
    }
    char buffer[16 * 1024];
    std::size_t length = 0;
    try {
      length = m_tls->read(buffer, sizeof buffer);
    } catch (const TlsError& error) {
      fail_tls(error, false);
    }
    if (redisReaderFeed(m_reader, buffer, length) != REDIS_OK) {
      fail(fmt::format("protocol error: {}", m_reader->errstr));
    }
  }
}

} // namespace ratelimit::store::redis
