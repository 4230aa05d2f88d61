#pragma once

#include "core/decide.hpp"
#include "store/run_slots.hpp"

#include <memory>
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

// A key's standing, as `status` shows it.
struct KeyStatus {
  std::string key;
  // Why the key's state cannot be read, when it cannot (the DamagedState message); then
  // `state` and `standing` are empty.
  std::string damage;
  core::KeyState state;
  core::Decision standing; // from core::inspect at the store's now
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

  // Forgets `keys` (all keys when `all`); returns how many existed.
  virtual std::size_t reset(std::span<const std::string> keys, bool all) = 0;

  // Forgets keys whose state is a fresh key's; returns their names.
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
};

// The message for a clock past core::k_max_time, of the store named `store`: such a clock
// decides nothing. Exit status 3.
std::string clock_beyond_range_message(std::string_view store);

// The message for a key created by another algorithm than the one asked for.
std::string key_conflict_message(std::string_view key, core::Algorithm stored,
                                 core::Algorithm requested);

} // namespace ratelimit::store
