#pragma once

#include "cli/limit_options.hpp"
#include "core/decide.hpp"
#include "store/store.hpp"

#include <functional>

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

private:
  store::Store& m_store;
  const LimitedRequest& m_request;
};

// Whether `n` requests of cost `c` granted at one instant leave a key exactly as one request
// of cost `n * c` would, so that records released together can be decided together. True
// for every algorithm but the leaky bucket, whose grants leave one interval apart.
bool instant_grants_combine(core::Algorithm algorithm);

} // namespace ratelimit::cli
