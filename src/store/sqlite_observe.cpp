// What a server answered, applied to a key of a SqliteStore (`observe`): the key's row, made
// for it when the answer leaves something to hold, and the throttles table, which counts the
// answers 429 and 503 per key name as the counters table counts decisions.
#include "store/sqlite_store.hpp"

#include "store/sqlite_grant_log.hpp"
#include "store/sqlite_key_row.hpp"
#include "store/state_codec.hpp"

#include <algorithm>
#include <limits>

namespace ratelimit::store {

PauseStanding SqliteStore::observe(std::string_view key, const core::Observation& observation) {
  return transaction([&] {
    std::optional<Row> row = find(key);
    core::Nanos time = now();
    Row observed = row ? *row : Row{};
    core::observe(observed.state, time, observation);
    core::forget_ended(observed.state.server, observed.state.clock);
    SqliteGrantLog log(m_database.handle(), observed.id);
    core::Decision standing = core::inspect(observed.state, log, time);
    core::Nanos fresh = fresh_at(standing);
    std::string server = encode_server_word(observed.state.server);
    if (!row && !core::holds_server_word(observed.state, observed.state.clock)) {
      // An answer that holds nothing (a policy alone, a pause of 0): no key is made for it.
    } else if (!row) {
      // No algorithm and no limits: the first call on the key gives them.
      Statement& insert = prepared(m_insert_observed,
                                   "INSERT INTO keys (name, algorithm, clock, limits, fresh_at, "
                                   "paused_until, grant_seq, server) VALUES (?1, '', ?2, ?3, ?4, "
                                   "?5, ?6, ?7)");
      insert.bind_blob(1, key)
          .bind(2, observed.state.clock)
          .bind_blob(3, "")
          .bind(4, fresh)
          .bind(5, observed.state.paused_until)
          .bind(6, observed.state.server.grant_seq);
      if (!server.empty()) {
        insert.bind_blob(7, server);
      }
      insert.run();
    } else {
      Statement& update =
          prepared(m_update_observed, "UPDATE keys SET clock = ?2, paused_until = ?3, "
                                      "fresh_at = ?4, server = ?5 WHERE id = ?1");
      update.bind(1, observed.id)
          .bind(2, observed.state.clock)
          .bind(3, observed.state.paused_until)
          .bind(4, std::max(fresh, observed.fresh_at));
      if (!server.empty()) {
        update.bind_blob(5, server);
      }
      update.run();
    }
    if (observation.throttled) {
      count_throttle(key, time);
    }
    return PauseStanding{standing.now, standing.paused_until, 0, standing.budget};
  });
}

void SqliteStore::count_throttle(std::string_view key, core::Nanos now) {
  prepared(m_count_throttle,
           "INSERT INTO throttles (name, count, touched_at) VALUES (?1, 1, ?2) "
           "ON CONFLICT (name) DO UPDATE SET count = count + 1, touched_at = excluded.touched_at")
      .bind_blob(1, key)
      .bind(2, now)
      .run();
}

} // namespace ratelimit::store
