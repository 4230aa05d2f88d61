#pragma once

#include "core/time.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>

namespace ratelimit::core {

// The grants of a sliding-log key, one log per limit (named by its period), oldest first.
// Each entry stores the cumulative cost of all grants up to and including it, so that the
// cost inside any interval is a difference of two entries and every question below is one
// index seek: a decision stays O(log n) however full the log is.
class GrantLog {
public:
  virtual ~GrantLog() = default;

  // The cumulative cost of the last entry at or before `time`, if one is stored.
  virtual std::optional<std::int64_t> cumulative_through(Nanos period, Nanos time) = 0;
  // The time of the first entry whose cumulative cost is at least `cumulative`.
  virtual std::optional<Nanos> time_reaching(Nanos period, std::int64_t cumulative) = 0;
  // The cumulative cost of the last entry below `cumulative`: the entry before the one
  // with that cumulative cost.
  virtual std::optional<std::int64_t> cumulative_before(Nanos period, std::int64_t cumulative) = 0;
  // The time of the last entry.
  virtual std::optional<Nanos> last_time(Nanos period) = 0;
  // Adds an entry after all others (`time` is not before the last entry's).
  virtual void append(Nanos period, Nanos time, std::int64_t cumulative) = 0;
  // Drops every entry at or before `time`.
  virtual void forget_through(Nanos period, Nanos time) = 0;
  // Drops the entry whose cumulative cost is `cumulative` and takes `cost` off the
  // cumulative cost of every later entry.
  virtual void remove(Nanos period, std::int64_t cumulative, std::int64_t cost) = 0;
};

// A GrantLog in memory, for `simulate` and the unit tests.
class MemoryGrantLog final : public GrantLog {
public:
  std::optional<std::int64_t> cumulative_through(Nanos period, Nanos time) override;
  std::optional<Nanos> time_reaching(Nanos period, std::int64_t cumulative) override;
  std::optional<std::int64_t> cumulative_before(Nanos period, std::int64_t cumulative) override;
  std::optional<Nanos> last_time(Nanos period) override;
  void append(Nanos period, Nanos time, std::int64_t cumulative) override;
  void forget_through(Nanos period, Nanos time) override;
  void remove(Nanos period, std::int64_t cumulative, std::int64_t cost) override;

  // Entries stored for `period`.
  std::size_t size(Nanos period) const;

private:
  struct Entry {
    Nanos time;
    std::int64_t cumulative;
  };
  std::map<Nanos, std::deque<Entry>> m_logs;
};

} // namespace ratelimit::core
