#include "core/grant_log.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

// The first entry whose cumulative cost is at least `cumulative` (entries are in order of it).
template <typename Log>
auto first_reaching(Log& log, std::int64_t cumulative) {
  return std::lower_bound(
      log.begin(), log.end(), cumulative,
      [](const auto& entry, std::int64_t value) { return entry.cumulative < value; });
}

} // namespace

std::optional<std::int64_t> MemoryGrantLog::cumulative_through(Nanos time) {
  auto& log = m_log;
  auto after = std::upper_bound(log.begin(), log.end(), time,
                                [](Nanos t, const Entry& entry) { return t < entry.time; });
  if (after == log.begin()) {
    return std::nullopt;
  }
  return std::prev(after)->cumulative;
}

std::optional<Nanos> MemoryGrantLog::time_reaching(std::int64_t cumulative) {
  auto& log = m_log;
  auto found = first_reaching(log, cumulative);
  if (found == log.end()) {
    return std::nullopt;
  }
  return found->time;
}

std::optional<std::int64_t> MemoryGrantLog::cumulative_before(std::int64_t cumulative) {
  auto& log = m_log;
  auto found = first_reaching(log, cumulative);
  if (found == log.begin()) {
    return std::nullopt;
  }
  return std::prev(found)->cumulative;
}

std::optional<Nanos> MemoryGrantLog::last_time() {
  auto& log = m_log;
  if (log.empty()) {
    return std::nullopt;
  }
  return log.back().time;
}

void MemoryGrantLog::append(Nanos time, std::int64_t cumulative) {
  m_log.push_back({time, cumulative});
}

void MemoryGrantLog::forget_before(std::int64_t cumulative) {
  auto& log = m_log;
  while (!log.empty() && log.front().cumulative < cumulative) {
    log.pop_front();
  }
}

void MemoryGrantLog::remove(std::int64_t cumulative, std::int64_t cost) {
  auto& log = m_log;
  auto found = std::find_if(log.begin(), log.end(),
                            [&](const Entry& entry) { return entry.cumulative == cumulative; });
  if (found == log.end()) {
    return;
  }
  for (auto it = log.erase(found); it != log.end(); ++it) {
    it->cumulative -= cost;
  }
}

} // namespace ratelimit::core
