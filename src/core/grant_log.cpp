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

std::optional<std::int64_t> MemoryGrantLog::cumulative_through(Nanos period, Nanos time) {
  auto& log = m_logs[period];
  auto after = std::upper_bound(log.begin(), log.end(), time,
                                [](Nanos t, const Entry& entry) { return t < entry.time; });
  if (after == log.begin()) {
    return std::nullopt;
  }
  return std::prev(after)->cumulative;
}

std::optional<Nanos> MemoryGrantLog::time_reaching(Nanos period, std::int64_t cumulative) {
  auto& log = m_logs[period];
  auto found = first_reaching(log, cumulative);
  if (found == log.end()) {
    return std::nullopt;
  }
  return found->time;
}

std::optional<std::int64_t> MemoryGrantLog::cumulative_before(Nanos period,
                                                              std::int64_t cumulative) {
  auto& log = m_logs[period];
  auto found = first_reaching(log, cumulative);
  if (found == log.begin()) {
    return std::nullopt;
  }
  return std::prev(found)->cumulative;
}

std::optional<Nanos> MemoryGrantLog::last_time(Nanos period) {
  auto& log = m_logs[period];
  if (log.empty()) {
    return std::nullopt;
  }
  return log.back().time;
}

void MemoryGrantLog::append(Nanos period, Nanos time, std::int64_t cumulative) {
  m_logs[period].push_back({time, cumulative});
}

void MemoryGrantLog::forget_through(Nanos period, Nanos time) {
  auto& log = m_logs[period];
  while (!log.empty() && log.front().time <= time) {
    log.pop_front();
  }
}

void MemoryGrantLog::remove(Nanos period, std::int64_t cumulative, std::int64_t cost) {
  auto& log = m_logs[period];
  auto found = std::find_if(log.begin(), log.end(),
                            [&](const Entry& entry) { return entry.cumulative == cumulative; });
  if (found == log.end()) {
    return;
  }
  for (auto it = log.erase(found); it != log.end(); ++it) {
    it->cumulative -= cost;
  }
}

std::size_t MemoryGrantLog::size(Nanos period) const {
  auto found = m_logs.find(period);
  return found == m_logs.end() ? 0 : found->second.size();
}

} // namespace ratelimit::core
