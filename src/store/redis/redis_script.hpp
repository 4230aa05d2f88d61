#pragma once

#include "core/decide.hpp"
#include "store/redis/redis_connection.hpp"
#include "store/store.hpp"

#include <optional>

namespace ratelimit::store::redis {

// The Lua script's operations on one key (see src/store/redis/lua/ratelimit.lua). Every time and
// duration here, in arguments and results alike, is in microseconds: the script's doubles
// hold microseconds since the epoch exactly. `now` is the server's TIME, or for the
// conformance test only an explicit time.
class RedisScript {
public:
  RedisScript(RedisConnection& connection, std::string prefix);

  // As core::decide for `key`, created with `algorithm`; a key made by another keeps its
  // own unless `algorithm` was `chosen` (then KeyConflict), as Store::decide says.
  // `request.now` is used only when `explicit_now`.
  core::Decision decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                        std::span<const core::Limit> limits, const core::Request& request,
                        bool explicit_now = false);

  // As core::give_back; `now` explicit for tests.
  void give_back(std::string_view key, core::Algorithm algorithm,
                 std::span<const core::Limit> limits, const core::Grant& grant,
                 std::optional<core::Nanos> now = std::nullopt);

  // As core::inspect, with the stored state; nothing for a fresh key.
  std::optional<KeyStatus> inspect(std::string_view key,
                                   std::optional<core::Nanos> now = std::nullopt);

  // Forgets `key`, whatever its values hold; whether it existed.
  bool reset(std::string_view key);

  // As Store::pause and Store::pause_of; `now` explicit for tests. A `duration` of a
  // whole number of microseconds.
  PauseStanding pause(std::string_view key, core::Nanos duration,
                      std::optional<core::Nanos> now = std::nullopt);
  PauseStanding pause_of(std::string_view key, std::optional<core::Nanos> now = std::nullopt,
                         const core::Grant* grant = nullptr);

  // As Store::add_to_counters: `waited` in microseconds.
  void add_to_counters(std::string_view key, bool granted, std::int64_t waited);

  // As core::observe (Store::observe), the observation's durations in microseconds; `now`
  // explicit for tests.
  PauseStanding observe(std::string_view key, const core::Observation& observation,
                        std::optional<core::Nanos> now = std::nullopt);

private:
  PauseStanding pause_reply(std::string_view key, const RedisReply& reply) const;
  // The reply's status (`ok`, `none`, `conflict`...); throws for `clock` and for `damaged`
  // state of `key`.
  std::string checked_status(std::string_view key, const RedisReply& reply) const;

  // Throws the StoreError for a key whose values the script cannot read (of another type,
  // set by hand, say): decide, give_back and inspect refuse it, naming `key`.
  [[noreturn]] void damaged(std::string_view key) const;
  // Throws the StoreError for a server clock past core::k_max_time.
  [[noreturn]] void clock_beyond_range() const;

  // The names the script touches for `key` (see redis_keys_of).
  std::vector<std::string> keys_of(std::string_view key) const;

  RedisConnection& m_connection;
  std::string m_prefix;
};

} // namespace ratelimit::store::redis
