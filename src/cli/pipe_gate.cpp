#include "cli/pipe_gate.hpp"

#include "cli/acquire.hpp"
#include "util/clock.hpp"

namespace ratelimit::cli {

LocalGate::LocalGate(const LimitedRequest& request, std::function<core::Nanos()> clock)
    : m_limits(request.limits), m_clock(std::move(clock)) {
  m_state.algorithm = request.algorithm;
}

core::Decision LocalGate::decide(core::Request request) {
  request.now = m_clock();
  return core::decide(m_state, m_limits, m_log, request);
}

void LocalGate::give_back(const core::Grant& grant) {
  core::give_back(m_state, m_limits, m_log, m_clock(), grant);
}

StoreGate::StoreGate(store::Store& store, const LimitedRequest& request)
    : m_store(store), m_request(request), m_algorithm(request.algorithm) {}

core::Decision StoreGate::decide(core::Request request) {
  core::Decision decision = m_store.decide(m_request.key, m_request.algorithm,
                                           m_request.algorithm_chosen, m_request.limits, request);
  m_algorithm = decision.algorithm;
  return decision;
}

void StoreGate::give_back(const core::Grant& grant) {
  m_store.give_back(m_request.key, m_algorithm, m_request.limits, grant);
}

bool StoreGate::paused() {
  return m_store.pause_of(m_request.key).paused_until != 0;
}

FailOpenGate::FailOpenGate(store::Store* store, const LimitedRequest& request,
                           const GlobalOptions& global)
    : m_request(request), m_global(global) {
  if (store != nullptr) {
    m_store_gate.emplace(*store, request);
  } else {
    fall_back();
  }
}

void FailOpenGate::fall_back() {
  m_store_gate.reset();
  m_local.emplace(m_request, util::realtime_nanos);
}

core::Decision FailOpenGate::decide(core::Request request) {
  if (m_store_gate) {
    try {
      m_last_local = false;
      return m_store_gate->decide(request);
    } catch (const store::StoreError& error) {
      if (!fail_open(m_global, error)) {
        throw;
      }
      fall_back();
    }
  }
  m_last_local = true;
  return m_local->decide(request);
}

void FailOpenGate::give_back(const core::Grant& grant) {
  if (m_last_local) {
    m_local->give_back(grant);
    return;
  }
  if (!m_store_gate) {
    return; // the store failed since: its reservation stays taken, which never over-admits
  }
  try {
    m_store_gate->give_back(grant);
  } catch (const store::StoreError& error) {
    if (!fail_open(m_global, error)) {
      throw;
    }
    fall_back();
  }
}

// A store that fails to tell under --on-store-error=allow is taken to say no, as when a
// waiter of `wait` wakes; its next decision falls back.
bool FailOpenGate::paused() {
  if (m_last_local || !m_store_gate) {
    return false;
  }
  try {
    return m_store_gate->paused();
  } catch (const store::StoreError& error) {
    if (!fail_open(m_global, error)) {
      throw;
    }
  }
  return false;
}

bool instant_grants_combine(core::Algorithm algorithm) {
  return core::info(algorithm).instant_grants_combine;
}

} // namespace ratelimit::cli
