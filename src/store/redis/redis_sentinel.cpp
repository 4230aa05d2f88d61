#include "store/redis/redis_sentinel.hpp"

#include "store/redis/redis_connection.hpp"
#include "store/store.hpp"

#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <hiredis/hiredis.h>
#include <optional>
#include <vector>

namespace ratelimit::store::redis {

namespace {

// `reply` as a host and port: the two strings of a get-master-addr-by-name answer.
std::optional<HostPort> address_of(const RedisReply& reply) {
  if (reply.size() != 2 || reply.at(0).type != REDIS_REPLY_STRING ||
      reply.at(1).type != REDIS_REPLY_STRING || reply.at(0).len == 0) {
    return std::nullopt;
  }
  HostPort address{std::string(reply.at(0).str, reply.at(0).len), 0};
  const redisReply& port = reply.at(1);
  auto [end, error] = std::from_chars(port.str, port.str + port.len, address.port);
  if (error != std::errc() || end != port.str + port.len || address.port < 1 ||
      address.port > 65535) {
    return std::nullopt;
  }
  return address;
}

} // namespace

RedisLocation locate_master(const RedisLocation& location, core::Nanos timeout) {
  std::vector<std::string> refusals;
  // Whether every sentinel was out of reach, rather than one answering no.
  bool all_unavailable = true;
  for (const HostPort& sentinel : location.sentinels) {
    RedisLocation asked;
    asked.host = sentinel.host;
    asked.port = sentinel.port;
    std::string why;
    try {
      RedisConnection connection(asked, timeout);
      std::string call[] = {"SENTINEL", "get-master-addr-by-name", location.master_name};
      RedisReply reply = connection.command(call);
      if (auto address = address_of(reply)) {
        RedisLocation master = location;
        master.sentinels.clear();
        master.host = std::move(address->host);
        master.port = address->port;
        return master;
      }
      why = reply->type == REDIS_REPLY_NIL ? "master unknown" : "unexpected reply";
      all_unavailable = false;
    } catch (const StoreError& error) {
      all_unavailable = all_unavailable && dynamic_cast<const StoreUnavailable*>(&error);
      // "redis HOST:PORT: why": the address is said once, below.
      std::string_view text = error.what();
      std::string prefix = fmt::format("redis {}: ", sentinel.address());
      why = text.starts_with(prefix) ? text.substr(prefix.size()) : text;
      if (why.find("authentication required") != std::string::npos) {
        why = "wants a password (sentinels are asked without one)";
      }
    }
    refusals.push_back(fmt::format("{}: {}", sentinel.address(), why));
  }
  std::string message = fmt::format("redis-sentinel: no sentinel gave the address of master "
                                    "\"{}\" (asked {})",
                                    location.master_name, fmt::join(refusals, "; "));
  if (all_unavailable) {
    throw StoreUnavailable(message);
  }
  throw StoreError(message);
}

} // namespace ratelimit::store::redis
