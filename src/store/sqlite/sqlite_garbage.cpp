// The garbage collection of a SqliteStore: the keys whose state has become a fresh key's,
// the counters no decision has touched for long, and for `gc` the commands that hold no
// run slot any more.
#include "store/sqlite/sqlite_store.hpp"

#include "store/sqlite/sqlite_grant_log.hpp"
#include "store/sqlite/sqlite_key_row.hpp"
#include "store/sqlite/sqlite_run_slots.hpp"

#include <fmt/format.h>
#include <limits>

namespace ratelimit::store::sqlite {

void SqliteStore::prepare_collection() {
  static const std::string k_due = fmt::format(
      "SELECT {} FROM keys WHERE fresh_at <= ?1 ORDER BY fresh_at LIMIT ?2", k_state_columns);
  prepared(m_due, k_due.c_str());
  set_fresh_at_statement();
  forget_stale_counters_statement();
}

void SqliteStore::collect_some_garbage(core::Nanos now) {
  prepare_collection();
  Statement& due = *m_due;
  struct Due {
    std::int64_t id;
    std::optional<core::KeyState> state;
  };
  std::vector<Due> rows;
  due.bind(1, now).bind(2, k_gc_batch);
  while (due.step()) {
    rows.push_back({due.column_int(0), decode_state(due)});
  }
  due.reset();
  Statement& set_fresh_at = *m_set_fresh_at;
  for (const Due& row : rows) {
    if (!row.state) {
      // Left for `reset`; moved out of the way so that it is not examined again and again.
      set_fresh_at.bind(1, row.id).bind(2, std::numeric_limits<core::Nanos>::max()).run();
      continue;
    }
    SqliteGrantLog log(m_grant_log, row.id);
    core::Decision standing = core::inspect(*row.state, log, now);
    if (standing.reset_after == 0) {
      erase(row.id);
    } else {
      set_fresh_at.bind(1, row.id).bind(2, fresh_at(standing)).run();
    }
  }
  forget_stale_counters(now, k_gc_batch);
}

std::vector<std::string> SqliteStore::collect_garbage() {
  return transaction([&] {
    core::Nanos time = now();
    SqliteRunSlots::collect(m_database, time);
    Statement all(m_database.handle(),
                  fmt::format("SELECT {}, name FROM keys ORDER BY name", k_state_columns));
    std::vector<std::pair<std::int64_t, std::string>> fresh;
    while (all.step()) {
      std::optional<core::KeyState> state = decode_state(all);
      if (!state) {
        continue; // damaged: not ours to judge; `reset` removes it
      }
      std::int64_t id = all.column_int(0);
      SqliteGrantLog log(m_grant_log, id);
      if (core::is_fresh(*state, log, time)) {
        fresh.emplace_back(id, std::string(all.column_blob(k_name_column)));
      }
    }
    all.reset();
    std::vector<std::string> removed;
    for (auto& [id, name] : fresh) {
      erase(id);
      removed.push_back(std::move(name));
    }
    forget_stale_counters(time, std::numeric_limits<std::int64_t>::max());
    return removed;
  });
}

} // namespace ratelimit::store::sqlite
