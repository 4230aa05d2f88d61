// The per-key counters of a SqliteStore: in the key's row, and in the counters table for the
// names that have no row (their row collected, or a denial that made none), so that the
// counters outlive the state. A name's counters are in one place: a row made for a key takes
// them from the table, a row collected leaves them there.
#include "store/sqlite/sqlite_store.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace ratelimit::store::sqlite {

core::Nanos SqliteStore::touched_at(core::Nanos now) {
  // Rounded up to a multiple of 2^42 ns (about 73 minutes), so that the index of those times
  // in the counters table changes about once an hour for a key counted there, not at every
  // decision. Counters kept an hour longer change nothing.
  constexpr core::Nanos k_grain = core::Nanos{1} << 42;
  if (now == 0) {
    return 0;
  }
  return now > std::numeric_limits<core::Nanos>::max() - k_grain ? now : (now | (k_grain - 1)) + 1;
}

KeyCounters SqliteStore::counted(const core::Decision& decision) {
  std::int64_t granted = decision.allowed ? 1 : 0;
  return {granted, 1 - granted, decision.allowed ? decision.wait / core::k_nanos_per_micro : 0};
}

void SqliteStore::bind_counters(Statement& statement, int first, const KeyCounters& tally,
                                core::Nanos touched) {
  statement.bind(first, tally.granted)
      .bind(first + 1, tally.limited)
      .bind(first + 2, tally.waited_us)
      .bind(first + 3, touched);
}

void SqliteStore::count(std::string_view key, const Row& stored, const KeyCounters& tally,
                        core::Nanos now) {
  if (stored.id != 0) {
    // The state written as it was, by the statement that writes a decision's.
    write(stored, stored.fresh_at, tally, now);
    return;
  }
  // A denial on a key that has no row, which it does not make one for.
  Statement& upsert =
      prepared(m_upsert_counters,
               "INSERT INTO counters (name, granted, limited, waited_us, touched_at) "
               "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET "
               "granted = granted + excluded.granted, limited = limited + excluded.limited, "
               "waited_us = waited_us + excluded.waited_us, touched_at = excluded.touched_at");
  upsert.bind_blob(1, key);
  bind_counters(upsert, 2, tally, touched_at(now));
  upsert.run();
}

void SqliteStore::take_counters_of(std::string_view key, KeyCounters& tally, core::Nanos& touched) {
  Statement& select =
      prepared(m_select_counters, "SELECT granted, limited, waited_us, touched_at, throttled "
                                  "FROM counters WHERE name = ?1");
  select.bind_blob(1, key);
  bool found = select.step();
  if (found) {
    tally.granted += select.column_int(0);
    tally.limited += select.column_int(1);
    tally.waited_us += select.column_int(2);
    touched = std::max(touched, select.column_int(3));
    tally.throttled += select.column_int(4);
  }
  select.reset();
  if (found) {
    prepared(m_erase_counters, "DELETE FROM counters WHERE name = ?1").bind_blob(1, key).run();
  }
}

void SqliteStore::keep_counters_of(std::int64_t id) {
  prepared(m_keep_counters,
           "INSERT INTO counters (name, granted, limited, waited_us, touched_at, throttled) "
           "SELECT name, granted, limited, waited_us, touched_at, throttled FROM keys "
           "WHERE id = ?1 AND (granted != 0 OR limited != 0 OR throttled != 0) "
           "ON CONFLICT (name) DO UPDATE SET "
           "granted = granted + excluded.granted, limited = limited + excluded.limited, "
           "waited_us = waited_us + excluded.waited_us, "
           "throttled = throttled + excluded.throttled, "
           "touched_at = max(touched_at, excluded.touched_at)")
      .bind(1, id)
      .run();
}

KeyCounters SqliteStore::counters_of(std::string_view key) {
  // In the key's row, or in the counters table when it has none.
  Statement& select =
      prepared(m_counters_of, "SELECT granted, limited, waited_us, throttled FROM keys "
                              "WHERE name = ?1 UNION ALL SELECT granted, limited, waited_us, "
                              "throttled FROM counters WHERE name = ?1");
  select.bind_blob(1, key);
  KeyCounters counters;
  while (select.step()) {
    counters.granted += select.column_int(0);
    counters.limited += select.column_int(1);
    counters.waited_us += select.column_int(2);
    counters.throttled += select.column_int(3);
  }
  select.reset();
  return counters;
}

Statement& SqliteStore::forget_stale_counters_statement() {
  return prepared(m_forget_stale_counters,
                  "DELETE FROM counters WHERE name IN (SELECT name FROM counters WHERE "
                  "touched_at < ?1 ORDER BY touched_at LIMIT ?2)");
}

void SqliteStore::forget_stale_counters(core::Nanos now, std::int64_t limit) {
  forget_stale_counters_statement().bind(1, now - k_counter_retention).bind(2, limit).run();
}

std::vector<NamedCounters> SqliteStore::counters(std::span<const std::string> keys) {
  return read_transaction([&] {
    std::vector<NamedCounters> result;
    auto read = [&](Statement& select) {
      while (select.step()) {
        result.push_back({std::string(select.column_blob(0)),
                          {select.column_int(1), select.column_int(2), select.column_int(3),
                           select.column_int(4)}});
      }
      select.reset();
    };
    // From the keys' rows, and the counters table for the names that have none; a row that no
    // decision counted in (a pause's) has none.
    constexpr const char* k_counters =
        "SELECT name, sum(granted), sum(limited), sum(waited_us), sum(throttled) FROM ("
        "SELECT name, granted, limited, waited_us, throttled FROM keys "
        "WHERE (granted != 0 OR limited != 0 OR throttled != 0){} UNION ALL "
        "SELECT name, granted, limited, waited_us, throttled FROM counters{}) GROUP BY name";
    if (keys.empty()) {
      Statement all(m_database.handle(),
                    fmt::format(fmt::runtime(k_counters), "", "") + " ORDER BY name");
      read(all);
    } else {
      Statement one(m_database.handle(),
                    fmt::format(fmt::runtime(k_counters), " AND name = ?1", " WHERE name = ?1"));
      for (const std::string& key : keys) {
        one.bind_blob(1, key);
        read(one);
      }
    }
    return result;
  });
}

void SqliteStore::add_to_counters(std::string_view key, bool granted, core::Nanos waited) {
  KeyCounters tally{granted ? 1 : 0, granted ? 0 : 1,
                    granted ? waited / core::k_nanos_per_micro : 0};
  transaction([&] {
    core::Nanos time = now();
    // In the key's row, by name (its state, which may be damaged, is not read), else in the
    // counters table.
    Statement& update =
        prepared(m_add_to_row, "UPDATE keys SET granted = granted + ?2, limited = limited + ?3, "
                               "waited_us = waited_us + ?4, touched_at = ?5 WHERE name = ?1");
    update.bind_blob(1, key);
    bind_counters(update, 2, tally, touched_at(time));
    update.run();
    if (sqlite3_changes(m_database.handle()) == 0) {
      count(key, Row{}, tally, time);
    }
    return 0;
  });
}

void SqliteStore::count_throttle(std::string_view key, core::Nanos now) {
  // In the key's row, else in the counters table; touched as a decision touches them, so
  // that they are kept for the retention from now.
  core::Nanos touched = touched_at(now);
  prepared(m_throttle_row, "UPDATE keys SET throttled = throttled + 1, "
                           "touched_at = max(touched_at, ?2) WHERE name = ?1")
      .bind_blob(1, key)
      .bind(2, touched)
      .run();
  if (sqlite3_changes(m_database.handle()) == 0) {
    prepared(m_throttle_counters,
             "INSERT INTO counters (name, throttled, touched_at) VALUES (?1, 1, ?2) "
             "ON CONFLICT (name) DO UPDATE SET throttled = throttled + 1, "
             "touched_at = max(touched_at, excluded.touched_at)")
        .bind_blob(1, key)
        .bind(2, touched)
        .run();
  }
}

} // namespace ratelimit::store::sqlite
