#pragma once

#include "core/time.hpp"

#include <cstdint>
#include <deque>
#include <optional>

namespace ratelimit::core {

// The grants of a sliding-log key, one log per key whatever limits the calls named, oldest
// first: every limit counts its own window in it. Each entry stores the cumulative cost of all
// grants up to and including it, so that the cost inside any interval is a difference of two
// entries and every question below is one index seek: a decision stays O(log n) however full the
// log is.
class GrantLog {
public:
  virtual ~GrantLog() = default;

  // The cumulative cost of the last entry at or before `time`, if one is stored.
  virtual std::optional<std::int64_t> cumulative_through(Nanos time) = 0;
  // The time of the first entry whose cumulative cost is at least `cumulative`.
  virtual std::optional<Nanos> time_reaching(std::int64_t cumulative) = 0;
  // The cumulative cost of the last entry below `cumulative`: the entry before the one
  // with that cumulative cost.
  virtual std::optional<std::int64_t> cumulative_before(std::int64_t cumulative) = 0;
  // The time of the last entry.
  virtual std::optional<Nanos> last_time() = 0;
  // Adds an entry after all others (`time` is not before the last entry's).
  virtual void append(Nanos time, std::int64_t cumulative) = 0;
  // Drops every entry whose cumulative cost is below `cumulative`. The entry with that
  // cost stays: every grant forgotten is at or before its time, which bounds them.
  virtual void forget_before(std::int64_t cumulative) = 0;
  // Drops the entry whose cumulative cost is `cumulative` and takes `cost` off the
  // cumulative cost of every later entry.
  virtual void remove(std::int64_t cumulative, std::int64_t cost) = 0;
  // Drops every entry: the key is forgotten.
  virtual void clear() = 0;
};

// A GrantLog in memory, for `simulate` and the unit tests.
class MemoryGrantLog final : public GrantLog {
public:
  std::optional<std::int64_t> cumulative_through(Nanos time) override;
  std::optional<Nanos> time_reaching(std::int64_t cumulative) override;
  std::optional<std::int64_t> cumulative_before(std::int64_t cumulative) override;
  std::optional<Nanos> last_time() override;
  void append(Nanos time, std::int64_t cumulative) override;
  void forget_before(std::int64_t cumulative) override;
  void remove(std::int64_t cumulative, std::int64_t cost) override;
  void clear() override { m_log.clear(); }

  // Entries stored.
  std::size_t size() const { return m_log.size(); }

private:
  struct Entry {
    Nanos time;
    std::int64_t cumulative;
  };
  std::deque<Entry> m_log;
};

} // namespace ratelimit::core
