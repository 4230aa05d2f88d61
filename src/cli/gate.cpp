#include "cli/gate.hpp"

#include "util/clock.hpp"

namespace ratelimit::cli {

LocalGate::LocalGate(const LimitedRequest& request, std::function<core::Nanos()> clock)
    : m_limits(request.limits), m_clock(std::move(clock)), m_adaptive(request.adaptive) {
  m_state.algorithm = request.algorithm;
}

core::Decision LocalGate::decide(core::Request request) {
  request.now = m_clock();
  request.adaptive = m_adaptive;
  return core::decide(m_state, m_limits, m_log, request);
}

void LocalGate::give_back(const core::Grant& grant) {
  core::give_back(m_state, m_limits, m_log, m_clock(), grant);
}

StoreGate::StoreGate(store::Store& store, const LimitedRequest& request, std::string local_fallback)
    : m_store(store), m_request(request), m_local_fallback(std::move(local_fallback)),
      m_algorithm(request.algorithm) {}

core::Decision StoreGate::decide(core::Request request) {
  request.adaptive = m_request.adaptive;
  core::Decision decision = m_store.decide(m_request.key, m_request.algorithm,
                                           m_request.algorithm_chosen, m_request.limits, request);
  m_algorithm = decision.algorithm;
  return decision;
}

void StoreGate::give_back(const core::Grant& grant) {
  m_store.give_back(m_request.key, m_algorithm, m_request.limits, grant);
}

bool StoreGate::paused(const core::Grant& grant) {
  store::PauseStanding standing = m_store.pause_of(m_request.key, &grant);
  return standing.paused_until != 0 || standing.overdrawn_until != 0 || standing.probe_until != 0;
}

FailOpenGate::FailOpenGate(store::Store* store, const LimitedRequest& request, StoreOpener& stores,
                           std::string failure)
    : m_request(request), m_stores(stores) {
  if (store != nullptr) {
    m_store_gate.emplace(*store, request);
  } else {
    fall_back_to_memory(std::move(failure));
  }
}

void FailOpenGate::fall_back_to_memory(std::string failure) {
  m_store_gate.reset();
  m_memory.emplace(m_request, util::realtime_nanos);
  m_failure = std::move(failure);
  ++m_fallbacks;
}

void FailOpenGate::fall_back(const store::StoreError& error) {
  // The local database fails as deny does: it has no outages, and nowhere further to go.
  if (!m_local_store && m_stores.falls_back_locally(error)) {
    m_store_gate.reset();
    m_local_store = m_stores.fall_back_locally(error);
    m_store_gate.emplace(*m_local_store, m_request);
    ++m_fallbacks;
    return;
  }
  if (!m_stores.fail_open(error)) {
    throw;
  }
  fall_back_to_memory(error.what());
}

core::Decision FailOpenGate::decide(core::Request request) {
  m_fallbacks_at_decision = m_fallbacks;
  while (m_store_gate) {
    try {
      return m_store_gate->decide(request);
    } catch (const store::StoreError& error) {
      fall_back(error);
      m_fallbacks_at_decision = m_fallbacks;
    }
  }
  return m_memory->decide(request);
}

void FailOpenGate::give_back(const core::Grant& grant) {
  if (m_fallbacks_at_decision != m_fallbacks) {
    return; // the store failed since: its reservation stays taken, which never over-admits
  }
  if (m_memory) {
    m_memory->give_back(grant);
    return;
  }
  try {
    m_store_gate->give_back(grant);
  } catch (const store::StoreError& error) {
    fall_back(error);
  }
}

// A decision of a store left since (or of memory) stands: nobody else can pause it.
bool FailOpenGate::paused(const core::Grant& grant) {
  if (!m_store_gate || m_fallbacks_at_decision != m_fallbacks) {
    return false;
  }
  return m_store_gate->paused(grant);
}

void FailOpenGate::close_while_sleeping() {
  if (m_store_gate) {
    m_store_gate->close_while_sleeping();
  }
  if (m_local_store) {
    m_local_store->close_while_sleeping();
  }
}

bool instant_grants_combine(core::Algorithm algorithm) {
  return core::info(algorithm).instant_grants_combine;
}

} // namespace ratelimit::cli
