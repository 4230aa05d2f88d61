#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

struct redisReply;

namespace ratelimit::store::redis {

// A reply from Redis, freed with it.
class RedisReply {
public:
  explicit RedisReply(redisReply* reply);
  const redisReply& operator*() const { return *m_reply; }
  const redisReply* operator->() const { return m_reply.get(); }

  bool is_error() const;
  // An integer reply's value, or a bulk string's as a number; StoreError otherwise.
  std::int64_t integer() const;
  std::string_view text() const;
  // A string's, status's or error's text (empty for others).
  static std::string_view text_of(const redisReply& reply);
  std::size_t size() const;
  // Element `index` of an array reply.
  const redisReply& at(std::size_t index) const;

private:
  std::shared_ptr<redisReply> m_reply;
};

// Whether `reply` is an integer, or a string that holds one: `value` gets it.
bool reply_integer(const redisReply& reply, std::int64_t& value);

} // namespace ratelimit::store::redis
