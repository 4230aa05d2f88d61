#include "cli/pipe_gate.hpp"

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
    : m_store(store), m_request(request) {}

core::Decision StoreGate::decide(core::Request request) {
  return m_store.decide(m_request.key, m_request.algorithm, m_request.limits, request);
}

void StoreGate::give_back(const core::Grant& grant) {
  m_store.give_back(m_request.key, m_request.algorithm, m_request.limits, grant);
}

bool instant_grants_combine(core::Algorithm algorithm) {
  return algorithm != core::Algorithm::leaky_bucket;
}

} // namespace ratelimit::cli
