#include "store/redis/redis_reply.hpp"

#include "store/store.hpp"

#include <charconv>
#include <hiredis/hiredis.h>

namespace ratelimit::store::redis {

bool reply_integer(const redisReply& reply, std::int64_t& value) {
  if (reply.type == REDIS_REPLY_INTEGER) {
    value = reply.integer;
    return true;
  }
  if (reply.type != REDIS_REPLY_STRING && reply.type != REDIS_REPLY_STATUS) {
    return false;
  }
  auto [end, error] = std::from_chars(reply.str, reply.str + reply.len, value);
  return error == std::errc() && end == reply.str + reply.len;
}

RedisReply::RedisReply(redisReply* reply)
    : m_reply(reply, [](redisReply* r) { freeReplyObject(r); }) {}

bool RedisReply::is_error() const {
  return m_reply->type == REDIS_REPLY_ERROR;
}

std::int64_t RedisReply::integer() const {
  std::int64_t value = 0;
  if (!reply_integer(*m_reply, value)) {
    throw StoreError("redis: unexpected reply (expected an integer)");
  }
  return value;
}

std::string_view RedisReply::text() const {
  return text_of(*m_reply);
}

std::string_view RedisReply::text_of(const redisReply& reply) {
  if (!reply.str) {
    return {};
  }
  return {reply.str, reply.len};
}

std::size_t RedisReply::size() const {
  return m_reply->type == REDIS_REPLY_ARRAY ? m_reply->elements : 0;
}

const redisReply& RedisReply::at(std::size_t index) const {
  if (index >= size()) {
    throw StoreError("redis: unexpected reply (too short)");
  }
  return *m_reply->element[index];
}

} // namespace ratelimit::store::redis
