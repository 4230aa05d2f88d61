#pragma once

#include "store/redis/redis_connection.hpp"
#include "store/run_slots.hpp"

#include <functional>
#include <string>
#include <vector>

namespace ratelimit::store::redis {

// How long a key's run slots outlive their last use in Redis beyond the longest lease and
// hold, and how long a waiter's wake-up list lasts at least.
inline constexpr core::Nanos k_run_slots_linger = 60 * core::k_nanos_per_second;

// Run slots in Redis, for processes on any number of hosts (see src/store/redis/lua/run_slots.lua
// in the source, embedded here). A key's commands live in a hash and two sorted sets under
// the key's hash tag: the commands by ticket (arrival order), their lease expiries, and
// the waiters. Each operation is one EVAL, with the server's clock.
//
// A command is alive while its lease (`lease`, server time) has not run out: a running
// command renews it every lease/3 (see run_child's tick), a waiter each time it looks. A
// dead command found by any look is removed (a waiter) or counted as ended then (a holder):
// a lost host frees its slots within a lease.
//
// Waiters block in BLPOP on a list of their own, `PREFIX{KEY}:runs:wake:TICKET`, on their
// own connection (the one of the store, busy with nothing else meanwhile), with signals
// watched beside it by poll(2). Whoever frees a slot, leaves the queue or starts pushes to
// the list of the first waiter; the BLPOP times out at the earliest known release, the
// earliest lease expiry of the others, or lease/3 to renew its own lease: a waiter looks at
// most once per lease/3 unless woken.
class RedisRunSlots final : public RunSlots {
public:
  // The script reads the server's clock; tests give `clock` instead, in nanoseconds (whole
  // microseconds are used), and wait for no change.
  using Clock = std::function<core::Nanos()>;

  RedisRunSlots(RedisConnection& connection, std::string prefix, core::Nanos lease,
                Clock clock = nullptr);

  StartAnswer join(std::string_view key, std::int64_t cost, core::Nanos hold,
                   std::span<const core::RunCap> caps) override;
  StartAnswer try_start(std::span<const core::RunCap> caps) override;
  int wait_for_change(core::Nanos timeout, util::InterruptSignals& signals) override;
  void leave() override;
  void finish() override;
  core::Nanos lease() const override { return m_lease; }
  void renew() override;

  // The live commands on the run slots of `keys`.
  static std::vector<RunEntry> entries(RedisConnection& connection, std::string_view prefix,
                                       std::span<const std::string> keys);

  // The names of the run slots' values of `key` (to reset it).
  static std::vector<std::string> names_of(std::string_view prefix, std::string_view key);

private:
  StartAnswer attempt(std::span<const core::RunCap> caps);
  RedisReply call(std::vector<std::string> arguments);
  void wake(std::int64_t ticket);

  RedisConnection& m_connection;
  std::string m_prefix;
  core::Nanos m_lease;
  Clock m_clock;
  std::vector<std::string> m_names;
  std::int64_t m_ticket = 0;
  std::int64_t m_cost = 1;
  core::Nanos m_hold = 0;
  // Microseconds: when the others' earliest lease runs out (0: none).
  core::Nanos m_next_expiry = 0;
  core::Nanos m_now = 0;
};

} // namespace ratelimit::store::redis
