#include "store/redis/redis_cluster.hpp"

#include "store/store.hpp"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <string>

namespace ratelimit::store::redis {

namespace {

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (char c : data) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(c) << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

// Whether the server says it runs in cluster mode, for a user that may not run CLUSTER SLOTS;
// false when it will not say either.
bool says_cluster_enabled(RedisConnection& connection) {
  std::string info[] = {"INFO", "cluster"};
  RedisReply reply = connection.command_or_error(info);
  return !reply.is_error() && reply.text().find("cluster_enabled:1") != std::string_view::npos;
}

} // namespace

int redis_hash_slot(std::string_view name) {
  std::size_t open = name.find('{');
  if (open != std::string_view::npos) {
    std::size_t close = name.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      name = name.substr(open + 1, close - open - 1);
    }
  }
  return crc16(name) % k_redis_hash_slots;
}

std::vector<RedisLocation> redis_cluster_masters(RedisConnection& connection) {
  std::string slots[] = {"CLUSTER", "SLOTS"};
  RedisReply reply = connection.command_or_error(slots);
  if (reply.is_error()) {
    // A server without cluster support refuses the command ("cluster support disabled"), a
    // proxy may not know it: then the one server holds every key.
    if (reply.text().starts_with("NOPERM") && says_cluster_enabled(connection)) {
      connection.fail("CLUSTER SLOTS: the user may not run it: listing the keys of a Redis "
                      "Cluster asks each of its masters, named by CLUSTER SLOTS");
    }
    return {};
  }
  if (reply->type != REDIS_REPLY_ARRAY) {
    connection.fail("CLUSTER SLOTS: unexpected reply");
  }
  // Each slot range: start, end, then its master (host, port, id...) and its replicas.
  std::vector<RedisLocation> masters;
  for (std::size_t i = 0; i < reply.size(); ++i) {
    const redisReply& range = reply.at(i);
    if (range.type != REDIS_REPLY_ARRAY || range.elements < 3 ||
        range.element[2]->type != REDIS_REPLY_ARRAY || range.element[2]->elements < 2 ||
        range.element[2]->element[0]->type != REDIS_REPLY_STRING ||
        range.element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
      connection.fail("CLUSTER SLOTS: unexpected reply");
    }
    const redisReply& node = *range.element[2];
    std::string host(node.element[0]->str, node.element[0]->len);
    auto port = static_cast<int>(node.element[1]->integer);
    // An empty host is the node asked; "?" one whose address the cluster does not know.
    if (host.empty()) {
      host = connection.location().host;
    }
    if (host == "?") {
      connection.fail(fmt::format("CLUSTER SLOTS: the master of slots {} to {} has no known "
                                  "address",
                                  range.element[0]->integer, range.element[1]->integer));
    }
    RedisLocation master = connection.location_at(host, port);
    bool known = std::any_of(masters.begin(), masters.end(), [&](const RedisLocation& other) {
      return other.host == master.host && other.port == master.port;
    });
    if (!known) {
      masters.push_back(std::move(master));
    }
  }
  return masters;
}

} // namespace ratelimit::store::redis
