#pragma once

#include "core/decide.hpp"
#include "store/run_slots.hpp"

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::store {

// The store failed: it could not be opened, locked, read or written. Exit status 3.
class StoreError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The store could not be reached or stopped answering: no connection (refused, no route, the
// name not resolved), no answer within the timeout, the connection lost, or a server that
// says it cannot serve now (loading, busy, no master). Not a refusal of ours (a password, a
// certificate, damaged state): those are plain StoreErrors. Exit status 3; under
// --on-store-error=local the decision is made on the local database instead.
class StoreUnavailable : public StoreError {
public:
  using StoreError::StoreError;
};

// The stored state of a key cannot be read (set by hand, damaged, out of bounds): the
// key must be reset. Exit status 3.
class DamagedState : public StoreError {
public:
  using StoreError::StoreError;
};

// The request cannot apply to the stored key (another algorithm created it). Exit status 2.
class KeyConflict : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The request is valid but this store cannot serve it (a number it cannot hold). Exit
// status 2.
class UnsupportedRequest : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// What decisions on a key have counted since it was first used or last reset: requests
// (calls, whatever their cost) granted and limited, and the time granted callers were to
// sleep for their slots (`wait`, `run`), in microseconds; and the answers 429 or 503 that
// `observe` was given for it. They only go up; they outlive the key's state, and go when the
// key is reset or has made no decision (observed no such answer) for `k_counter_retention`.
struct KeyCounters {
  std::int64_t granted = 0;
  std::int64_t limited = 0;
  std::int64_t waited_us = 0;
  std::int64_t throttled = 0;

  bool operator==(const KeyCounters&) const = default;
};

// How long a key's counters outlive its last decision: longer than a month, so that a
// monthly job keeps them, while the counters of one-off keys do not pile up for ever.
inline constexpr core::Nanos k_counter_retention = 31 * 24 * 3600 * core::k_nanos_per_second;

// The counters of one key, as `counters` lists them.
struct NamedCounters {
  std::string key;
  KeyCounters counters;
};

// A key's standing, as `status` shows it.
struct KeyStatus {
  std::string key;
  // Why the key's state cannot be read, when it cannot (the DamagedState message); then
  // `state` and `standing` are empty.
  std::string damage;
  core::KeyState state;
  core::Decision standing; // from core::inspect at the store's now
  KeyCounters counters;
};

// A key's pause as the store sees it: `now` by the store's clock, and the end of the pause,
// 0 when none runs at `now`. Both in nanoseconds since the epoch.
struct PauseStanding {
  core::Nanos now = 0;
  core::Nanos paused_until = 0;
  // pause_of: the reset of a server budget overdrawn at `now` (core::overdrawn_until), else 0.
  core::Nanos overdrawn_until = 0;
  // observe: the key's server budget after the observation, when one runs.
  std::optional<core::BudgetStanding> budget;
  // pause_of for a waiter's grant: until when it waits for a probe's answer
  // (core::probe_held_until), else 0.
  core::Nanos probe_until = 0;
};

// Where keys live. Each call is one atomic read-modify-write of one key; nothing is held
// between calls, so a caller may sleep between them.
class Store {
public:
  virtual ~Store() = default;

  // Decides `request` for `key` under `limits` with the store's clock (`request.now` is
  // ignored). A new key, or a fresh one, is created with `algorithm`. An existing key made
  // by another algorithm keeps its own when `algorithm` is only the default (not
  // `chosen`); when it was chosen, that throws KeyConflict. The decision names the
  // algorithm that decided.
  virtual core::Decision decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                                std::span<const core::Limit> limits, core::Request request) = 0;

  // Returns what `grant`, an earlier decision on `key`, reserved.
  virtual void give_back(std::string_view key, core::Algorithm algorithm,
                         std::span<const core::Limit> limits, const core::Grant& grant) = 0;

  // The standing of `keys`, or of every key when `keys` is empty; unknown keys are absent,
  // a damaged key says so in its `damage` and does not hide the others.
  virtual std::vector<KeyStatus> status(std::span<const std::string> keys) = 0;

  // The counters of the keys of `keys` that have any (of every key that has any when `keys` is
  // empty), the keys whose state is gone included: in the order of `keys`, else in key order.
  virtual std::vector<NamedCounters> counters(std::span<const std::string> keys) = 0;

  // Adds one request decided outside `decide` to the counters of `key`, as `decide` adds its
  // own: granted, its caller having waited `waited` nanoseconds for it, or limited. For the
  // commands on run slots (`run -j`, `--until-exit`), whose starts `decide` does not see.
  virtual void add_to_counters(std::string_view key, bool granted, core::Nanos waited) = 0;

  // Forgets `keys` (all keys when `all`), their counters included; returns how many existed
  // (had a state or counters).
  virtual std::size_t reset(std::span<const std::string> keys, bool all) = 0;

  // Pauses `key` for `duration` from the store's now (core::pause): no grant to anyone until
  // it ends. A key that does not exist is created, holding only the pause. Returns the
  // pause, which a longer one already running keeps.
  virtual PauseStanding pause(std::string_view key, core::Nanos duration) = 0;

  // The pause of `key` now, without changing anything, for a waiter that wakes to check that
  // no pause began while it slept: serialised with `pause`, so that a pause is in force for
  // every waiter from the instant it says it begins (`now` is read after any pause that
  // began before it has committed). Also whether the key's server budget is overdrawn then:
  // an answer observed while it slept may have said less was left than was granted. With
  // `grant`, the waiter's: whether it waits for the answer of a probe that went before it.
  virtual PauseStanding pause_of(std::string_view key, const core::Grant* grant = nullptr) = 0;

  // Applies what a server answered for `key` (core::observe) from the store's now, in one
  // transaction: the pause it asks for, the server budget, the answered grant, the policies;
  // an answer 429 or 503 adds to the key's throttled count. A key that does not exist is
  // created when the answer leaves it something to hold (a pause, a budget), holding only
  // that. Returns the pause and the budget after it.
  virtual PauseStanding observe(std::string_view key, const core::Observation& observation) = 0;

  // Forgets keys whose state is a fresh key's; returns their names. Also forgets the counters
  // of keys that have made no decision for `k_counter_retention`.
  virtual std::vector<std::string> collect_garbage() = 0;

  // The store's clock, in nanoseconds since the epoch.
  virtual core::Nanos now() = 0;

  // A place on the run slots of a key, for one command (`run -j`, `run --until-exit`), alive
  // while its lease of `lease` is renewed where liveness needs a lease (Redis). The store
  // must outlive it.
  virtual std::unique_ptr<RunSlots> run_slots(core::Nanos lease) = 0;

  // The live commands on the run slots of `keys` (of every key when `keys` is empty),
  // running and waiting, by key and arrival.
  virtual std::vector<RunEntry> run_entries(std::span<const std::string> keys) = 0;

  // Closes what the store holds open (a server connection) before its caller sleeps for
  // at least k_long_sleep; the next call opens it again. The SQLite store holds nothing
  // open between calls.
  virtual void close_while_sleeping() {}
};

// How long a sleep must be for a caller to close the store's connections first: a connection
// costs a few milliseconds to make again, and idle for long a server or a proxy may end it.
inline constexpr core::Nanos k_long_sleep = core::k_nanos_per_second;

// The message for a clock past core::k_max_time, of the store named `store`: such a clock
// decides nothing. Exit status 3.
std::string clock_beyond_range_message(std::string_view store);

// The message for a key created by another algorithm than the one asked for.
std::string key_conflict_message(std::string_view key, core::Algorithm stored,
                                 core::Algorithm requested);

} // namespace ratelimit::store
