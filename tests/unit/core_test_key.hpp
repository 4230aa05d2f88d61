#pragma once

// A key driven through core::decide with explicit times, for the core unit tests.

#include "core/decide.hpp"
#include "core/grant_log.hpp"

#include <limits>
#include <vector>

namespace ratelimit::core::testing {

inline constexpr Nanos k_ms = k_nanos_per_milli;
inline constexpr Nanos k_s = k_nanos_per_second;
inline constexpr Nanos k_min = 60 * k_s;
// A whole hour since the epoch (2023-11-14T22:00:00Z), so minutes and seconds are aligned.
inline constexpr Nanos k_t0 = 1'699'999'200 * k_s;

// `count` per `period` with `burst` (0: the default, `count`).
inline Limit limit_of(std::int64_t count, Nanos period, std::int64_t burst = 0) {
  return Limit{Rate{count, period}, burst == 0 ? count : burst};
}

class TestKey {
public:
  TestKey(Algorithm algorithm, std::vector<Limit> limits) : m_limits(std::move(limits)) {
    m_state.algorithm = algorithm;
  }

  // `try` at `now`.
  Decision attempt(Nanos now, std::int64_t cost = 1) { return decide_at(now, cost, false); }

  // `wait` at `now`: reserves the earliest slot within `max_wait`.
  Decision reserve(Nanos now, std::int64_t cost = 1,
                   Nanos max_wait = std::numeric_limits<Nanos>::max()) {
    return decide_at(now, cost, true, max_wait);
  }

  // `request` as it is (its own time, cost and flags).
  Decision ask(const Request& request) { return decide(m_state, m_limits, m_log, request); }

  // Gives back what `decision` reserved, at `now`.
  void cancel(Nanos now, const Decision& decision) {
    core::give_back(m_state, m_limits, m_log, now, decision.grant);
  }

  Decision standing(Nanos now) { return inspect(m_state, m_log, now); }
  bool fresh(Nanos now) { return is_fresh(m_state, m_log, now); }

  KeyState& state() { return m_state; }
  MemoryGrantLog& log() { return m_log; }
  std::vector<Limit>& limits() { return m_limits; }

private:
  Decision decide_at(Nanos now, std::int64_t cost, bool reserve,
                     Nanos max_wait = std::numeric_limits<Nanos>::max()) {
    Request request;
    request.now = now;
    request.cost = cost;
    request.reserve = reserve;
    request.max_wait = max_wait;
    return decide(m_state, m_limits, m_log, request);
  }

  KeyState m_state;
  std::vector<Limit> m_limits;
  MemoryGrantLog m_log;
};

} // namespace ratelimit::core::testing
