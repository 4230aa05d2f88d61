#pragma once

#include "store/redis/redis_connection.hpp"
#include "store/redis/redis_script.hpp"
#include "store/store.hpp"
#include "store/store_url.hpp"

#include <functional>
#include <optional>

namespace ratelimit::store::redis {

inline constexpr std::string_view k_default_redis_prefix = "ratelimit:";

// Keys in one Redis server, or one Redis Cluster, shared by every host. Each decision is one call
// of a Lua script (EVALSHA), atomic on the server, with the server's clock: hosts with skewed
// clocks agree. The store counts time in whole microseconds, the resolution of Redis's TIME:
// periods are rounded up to a whole microsecond (a limit may only get stricter) and every duration
// it returns is a whole number of microseconds. Stored values expire when their state is a fresh
// key's again, so `collect_garbage` has nothing to do; a key's counters, in a hash of their own
// updated by the same script call, expire `k_counter_retention` after the key's last decision. On
// Redis Cluster every name of one key shares its slot (see redis_keys.hpp): each call goes to the
// node that holds the key, and listing the keys (status, counters, reset --all, run entries) scans
// every master.
class RedisStore final : public Store {
public:
  // The server's clock decides; tests give `clock` instead (nanoseconds since the epoch, of
  // which the script sees whole microseconds), so that the store can be compared with the
  // core at explicit times. Then nothing the script writes expires.
  using Clock = std::function<core::Nanos()>;

  // Connects to `location`; `timeout` bounds the connection and every command. Throws
  // StoreError.
  RedisStore(const RedisLocation& location, std::string prefix, core::Nanos timeout,
             Clock clock = nullptr);

  core::Decision decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                        std::span<const core::Limit> limits, core::Request request) override;
  void give_back(std::string_view key, core::Algorithm algorithm,
                 std::span<const core::Limit> limits, const core::Grant& grant) override;
  std::vector<KeyStatus> status(std::span<const std::string> keys) override;
  std::vector<NamedCounters> counters(std::span<const std::string> keys) override;
  void add_to_counters(std::string_view key, bool granted, core::Nanos waited) override;
  std::size_t reset(std::span<const std::string> keys, bool all) override;
  PauseStanding pause(std::string_view key, core::Nanos duration) override;
  PauseStanding pause_of(std::string_view key, const core::Grant* grant = nullptr) override;
  PauseStanding observe(std::string_view key, const core::Observation& observation) override;
  std::vector<std::string> collect_garbage() override;
  core::Nanos now() override;
  std::unique_ptr<RunSlots> run_slots(core::Nanos lease) override;
  std::vector<RunEntry> run_entries(std::span<const std::string> keys) override;
  void close_while_sleeping() override { m_connection.close_while_idle(); }

private:
  // The names under the prefix on one server, and the connection to it.
  struct ScannedNames {
    RedisConnection* connection;
    std::vector<std::string> names;
  };

  // Every name under the prefix, by SCAN: on Redis Cluster on each master (over a connection
  // of its own, kept until the next scan), else on the one server.
  std::vector<ScannedNames> scan();
  // The script's explicit now, in microseconds: none for the server's clock.
  std::optional<core::Nanos> script_now() const;

  RedisConnection m_connection;
  std::string m_prefix;
  Clock m_clock;
  RedisScript m_script;
  // The masters of a Redis Cluster, connected to by the last scan.
  std::vector<std::unique_ptr<RedisConnection>> m_masters;
};

// `limits` in microseconds for the script: periods rounded up to a whole microsecond.
// Throws UnsupportedRequest for a count, burst or cost the script's doubles cannot hold.
std::vector<core::Limit> limits_in_micros(std::span<const core::Limit> limits, std::int64_t cost);

} // namespace ratelimit::store::redis
