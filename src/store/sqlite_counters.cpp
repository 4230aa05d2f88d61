// The per-key counters of a SqliteStore: the counters table, apart from the keys' state.
#include "store/sqlite_store.hpp"

#include <fmt/format.h>
#include <limits>

namespace ratelimit::store {

namespace {

// When counters touched at `now` were last touched, as stored: rounded up to a multiple of
// 2^42 ns (about 73 minutes), so that the index of those times changes about once an hour
// for a busy key, not at every decision. Counters kept an hour longer change nothing.
core::Nanos touched_at(core::Nanos now) {
  constexpr core::Nanos k_grain = core::Nanos{1} << 42;
  return now > std::numeric_limits<core::Nanos>::max() - k_grain ? now : (now | (k_grain - 1)) + 1;
}

} // namespace

void SqliteStore::count(std::string_view key, const core::Decision& decision, core::Nanos now) {
  core::Nanos touched = touched_at(now);
  std::int64_t granted = decision.allowed ? 1 : 0;
  std::int64_t waited_us = decision.allowed ? decision.wait / core::k_nanos_per_micro : 0;
  auto add_to = [&](Statement& statement) {
    statement.bind_blob(1, key)
        .bind(2, granted)
        .bind(3, 1 - granted)
        .bind(4, waited_us)
        .bind(5, touched)
        .run();
  };
  // Most decisions find the key's row touched within the hour: a plain update of it, which
  // leaves the index of those times alone and runs the code the update of the key's state
  // has already run (each page of code a process first runs costs it a page fault).
  add_to(prepared(m_count, "UPDATE counters SET granted = granted + ?2, limited = limited + ?3, "
                           "waited_us = waited_us + ?4 WHERE name = ?1 AND touched_at >= ?5"));
  if (sqlite3_changes(m_database.handle()) > 0) {
    return;
  }
  add_to(prepared(m_upsert_counters,
                  "INSERT INTO counters (name, granted, limited, waited_us, touched_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET "
                  "granted = granted + excluded.granted, limited = limited + excluded.limited, "
                  "waited_us = waited_us + excluded.waited_us, touched_at = excluded.touched_at"));
}

KeyCounters SqliteStore::counters_of(std::string_view key) {
  Statement& select = prepared(m_select_counters,
                               "SELECT granted, limited, waited_us FROM counters WHERE name = ?1");
  select.bind_blob(1, key);
  KeyCounters counters;
  if (select.step()) {
    counters = {select.column_int(0), select.column_int(1), select.column_int(2)};
  }
  select.reset();
  return counters;
}

void SqliteStore::forget_stale_counters(core::Nanos now, std::int64_t limit) {
  prepared(m_forget_stale_counters,
           "DELETE FROM counters WHERE name IN (SELECT name FROM counters WHERE touched_at < ?1 "
           "ORDER BY touched_at LIMIT ?2)")
      .bind(1, now - k_counter_retention)
      .bind(2, limit)
      .run();
}

std::vector<NamedCounters> SqliteStore::counters(std::span<const std::string> keys) {
  return read_transaction([&] {
    std::vector<NamedCounters> result;
    auto read = [&](Statement& select) {
      while (select.step()) {
        result.push_back({std::string(select.column_blob(0)),
                          {select.column_int(1), select.column_int(2), select.column_int(3)}});
      }
      select.reset();
    };
    constexpr const char* k_columns = "SELECT name, granted, limited, waited_us FROM counters";
    if (keys.empty()) {
      Statement all(m_database.handle(), fmt::format("{} ORDER BY name", k_columns));
      read(all);
    } else {
      Statement one(m_database.handle(), fmt::format("{} WHERE name = ?1", k_columns));
      for (const std::string& key : keys) {
        one.bind_blob(1, key);
        read(one);
      }
    }
    return result;
  });
}

void SqliteStore::add_to_counters(std::string_view key, bool granted, core::Nanos waited) {
  transaction([&] {
    core::Decision decision;
    decision.allowed = granted;
    decision.wait = granted ? waited : 0;
    count(key, decision, now());
    return 0;
  });
}

} // namespace ratelimit::store
