#pragma once

#include "cli/limit_options.hpp"
#include "cli/store_opener.hpp"
#include "core/decide.hpp"
#include "store/store.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ratelimit::cli {

// Where `wait`, `run` and `pipe` take their slots (see acquire_slot): a key in the store,
// shared with every other process, or a limiter of this process's own in memory (`pipe`
// without a key; `--on-store-error=allow` once the store failed).
class Gate {
public:
  virtual ~Gate() = default;

  // Decides `request` with the gate's clock (`request.now` is ignored).
  virtual core::Decision decide(core::Request request) = 0;

  // Returns what `grant`, an earlier decision of this gate, reserved.
  virtual void give_back(const core::Grant& grant) = 0;

  // Whether reservations outlive this process, so that one cut short must be given back.
  virtual bool shared() const = 0;
  // Whether a pause of the key runs now, or its server budget is overdrawn (an answer
  // observed meanwhile said less was left than was granted): asked once by a waiter that
  // slept until its slot, serialised with `pause` (Store::pause_of); or whether `grant`, its
  // own, waits for the answer of a probe that went before it (core::probe_held_until).
  // Throws store::StoreError when the store cannot tell.
  virtual bool paused(const core::Grant& grant) = 0;
  // Before a sleep of at least store::k_long_sleep: see Store::close_while_sleeping.
  virtual void close_while_sleeping() {}
  // The store error the gate decides without its store for (--on-store-error=allow), or
  // empty while a store decides.
  virtual std::string_view failure() const { return {}; }
  // The store error the gate decides on the local database for (--on-store-error=local), or
  // empty.
  virtual std::string_view local_fallback() const { return {}; }
};

// A limiter in this process: the same decisions as a store's key, on a state that lives as
// long as the process.
class LocalGate final : public Gate {
public:
  // `clock` gives the time in nanoseconds since the epoch.
  LocalGate(const LimitedRequest& request, std::function<core::Nanos()> clock);

  core::Decision decide(core::Request request) override;
  void give_back(const core::Grant& grant) override;
  bool shared() const override { return false; }
  bool paused(const core::Grant&) override { return false; }

private:
  std::vector<core::Limit> m_limits;
  core::KeyState m_state;
  core::MemoryGrantLog m_log;
  std::function<core::Nanos()> m_clock;
  bool m_adaptive = false;
};

// The key `request.key` of `store`; every call is one transaction, nothing is held between.
class StoreGate final : public Gate {
public:
  // `local_fallback`: the store error for which `store` is the local database, if it is.
  StoreGate(store::Store& store, const LimitedRequest& request, std::string local_fallback = {});

  core::Decision decide(core::Request request) override;
  void give_back(const core::Grant& grant) override;
  bool shared() const override { return true; }
  bool paused(const core::Grant& grant) override;
  void close_while_sleeping() override { m_store.close_while_sleeping(); }
  std::string_view local_fallback() const override { return m_local_fallback; }

private:
  store::Store& m_store;
  const LimitedRequest& m_request;
  std::string m_local_fallback;
  // The algorithm of the key at the last decision, which its grants go back to.
  core::Algorithm m_algorithm;
};

// The key `request.key` of `store` while the store works. After an outage of the store under
// --on-store-error=local (one warning), the same key in the local database, for the rest of
// the stream: shared with this host's processes only. After a store error under allow (one
// warning), or from the start when `store` is null because it could not be opened, a limiter
// of this process's own: the records keep the limit's pace here, as `pipe` without a key,
// but no longer share it. Otherwise a store error throws. `paused` fails as the gate's store
// fails: what a failed check means is the caller's to say (see acquire_slot).
class FailOpenGate final : public Gate {
public:
  // `store` null: it could not be opened, with the error `failure` (under allow). `stores`:
  // where `store` came from, which applies --on-store-error when it fails.
  FailOpenGate(store::Store* store, const LimitedRequest& request, StoreOpener& stores,
               std::string failure = {});

  core::Decision decide(core::Request request) override;
  void give_back(const core::Grant& grant) override;
  bool shared() const override { return true; }
  bool paused(const core::Grant& grant) override;
  void close_while_sleeping() override;

  std::string_view failure() const override { return m_failure; }
  std::string_view local_fallback() const override { return m_stores.local_fallback(); }

private:
  // Leaves the store for the local database (under local, for an outage) or for a limiter
  // in memory (under allow); throws `error` again otherwise.
  void fall_back(const store::StoreError& error);
  void fall_back_to_memory(std::string failure);

  std::optional<StoreGate> m_store_gate;
  const LimitedRequest& m_request;
  StoreOpener& m_stores;
  // The local database, once the store failed under local.
  std::unique_ptr<store::Store> m_local_store;
  std::optional<LocalGate> m_memory;
  // How many times the gate has left a store, and how many it had at the last decision: a
  // grant of a store left since stays taken there.
  int m_fallbacks = 0;
  int m_fallbacks_at_decision = 0;
  std::string m_failure;
};

// Whether `n` requests of cost `c` granted at one instant leave a key exactly as one request
// of cost `n * c` would, so that records released together can be decided together. True
// for every algorithm but the leaky bucket, whose grants leave one interval apart.
bool instant_grants_combine(core::Algorithm algorithm);

} // namespace ratelimit::cli
