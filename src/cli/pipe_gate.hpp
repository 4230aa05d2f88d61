#pragma once

#include "cli/global_options.hpp"
#include "cli/limit_options.hpp"
#include "core/decide.hpp"
#include "store/store.hpp"

#include <functional>
#include <optional>

namespace ratelimit::cli {

// Where `pipe` takes a slot for each record: a key in the store, shared with every other
// process, or a limiter of its own in memory when no key is given.
class PipeGate {
public:
  virtual ~PipeGate() = default;

  // Decides `request` with the gate's clock (`request.now` is ignored).
  virtual core::Decision decide(core::Request request) = 0;

  // Returns what `grant`, an earlier decision of this gate, reserved.
  virtual void give_back(const core::Grant& grant) = 0;

  // Whether reservations outlive this process, so that one cut short must be given back.
  virtual bool shared() const = 0;
  // Whether a pause of the key runs now: asked once by a record that slept until its slot.
  virtual bool paused() = 0;
  // Before a sleep of at least store::k_long_sleep: see Store::close_while_sleeping.
  virtual void close_while_sleeping() {}
};

// A limiter in this process: the same decisions as a store's key, on a state that lives as
// long as the process.
class LocalGate final : public PipeGate {
public:
  // `clock` gives the time in nanoseconds since the epoch.
  LocalGate(const LimitedRequest& request, std::function<core::Nanos()> clock);

  core::Decision decide(core::Request request) override;
  void give_back(const core::Grant& grant) override;
  bool shared() const override { return false; }
  bool paused() override { return false; }

private:
  std::vector<core::Limit> m_limits;
  core::KeyState m_state;
  core::MemoryGrantLog m_log;
  std::function<core::Nanos()> m_clock;
};

// The key `request.key` of `store`; every call is one transaction, nothing is held between.
class StoreGate final : public PipeGate {
public:
  StoreGate(store::Store& store, const LimitedRequest& request);

  core::Decision decide(core::Request request) override;
  void give_back(const core::Grant& grant) override;
  bool shared() const override { return true; }
  bool paused() override;
  void close_while_sleeping() override { m_store.close_while_sleeping(); }

private:
  store::Store& m_store;
  const LimitedRequest& m_request;
  // The algorithm of the key at the last decision, which its grants go back to.
  core::Algorithm m_algorithm;
};

// The key `request.key` of `store` while the store works. After an outage of the store under
// --on-store-error=local (one warning), the same key in the local database, for the rest of
// the stream: shared with this host's processes only. After a store error under allow (one
// warning), or from the start when `store` is null because it could not be opened, a limiter
// of this process's own: the records keep the limit's pace here, as `pipe` without a key,
// but no longer share it. Otherwise a store error throws.
class FailOpenGate final : public PipeGate {
public:
  FailOpenGate(store::Store* store, const LimitedRequest& request, const GlobalOptions& global);

  core::Decision decide(core::Request request) override;
  void give_back(const core::Grant& grant) override;
  bool shared() const override { return true; }
  bool paused() override;
  void close_while_sleeping() override;

private:
  // Leaves the store for the local database (under local, for an outage) or for a limiter
  // in memory (under allow); throws `error` again otherwise.
  void fall_back(const store::StoreError& error);
  void fall_back_to_memory();

  std::optional<StoreGate> m_store_gate;
  const LimitedRequest& m_request;
  const GlobalOptions& m_global;
  // The local database, once the store failed under local.
  std::unique_ptr<store::Store> m_local_store;
  std::optional<LocalGate> m_memory;
  // How many times the gate has left a store, and how many it had at the last decision: a
  // grant of a store left since stays taken there.
  int m_fallbacks = 0;
  int m_fallbacks_at_decision = 0;
};

// Whether `n` requests of cost `c` granted at one instant leave a key exactly as one request
// of cost `n * c` would, so that records released together can be decided together. True
// for every algorithm but the leaky bucket, whose grants leave one interval apart.
bool instant_grants_combine(core::Algorithm algorithm);

} // namespace ratelimit::cli
