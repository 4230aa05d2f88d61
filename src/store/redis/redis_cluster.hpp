#pragma once

#include "store/redis/redis_connection.hpp"
#include "store/store_url.hpp"

#include <string_view>
#include <vector>

namespace ratelimit::store::redis {

inline constexpr int k_redis_hash_slots = 16384;

// The Redis Cluster hash slot of `name`: the CRC16 (XMODEM) of its hash tag, the text between
// its first `{` and the first `}` after it when that is not empty, else of the whole name,
// modulo 16384. Names of one slot may share a multi-key command (UNLINK); others may not.
int redis_hash_slot(std::string_view name);

// The masters of the Redis Cluster whose node `connection` is connected to (CLUSTER SLOTS),
// each reached as `connection` is (RedisConnection::location_at: the same user, password and
// TLS files), in the order of their slots; empty when the server is not part of a cluster
// (the command is refused as disabled or unknown, or names no slot). A server that refuses
// CLUSTER SLOTS to the user (NOPERM) is asked INFO cluster: a cluster then throws StoreError
// naming the permission needed, rather than listing the keys of one node only. Throws
// StoreError.
std::vector<RedisLocation> redis_cluster_masters(RedisConnection& connection);

} // namespace ratelimit::store::redis
