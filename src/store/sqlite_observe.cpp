// What a server answered, applied to a key of a SqliteStore (`observe`): the key's row, made
// for it when the answer leaves something to hold, and for an answer 429 or 503 the key's
// counters.
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
    // The limits as they were, the server word as it is now.
    std::string limits =
        encode_limits(observed.state.limits, observed.state.remembered, observed.state.server);
    if (!row && !core::holds_server_word(observed.state, observed.state.clock)) {
      // An answer that holds nothing (a policy alone, a pause of 0): no key is made for it.
    } else if (!row) {
      // No algorithm and no limits: the first call on the key gives them.
      prepared(m_insert_observed, "INSERT INTO keys (name, algorithm, clock, limits, fresh_at, "
                                  "paused_until) VALUES (?1, '', ?2, ?3, ?4, ?5)")
          .bind_blob(1, key)
          .bind(2, observed.state.clock)
          .bind_blob(3, limits)
          .bind(4, fresh)
          .bind(5, observed.state.paused_until)
          .run();
    } else {
      prepared(m_update_observed, "UPDATE keys SET clock = ?2, paused_until = ?3, fresh_at = ?4, "
                                  "limits = ?5 WHERE id = ?1")
          .bind(1, observed.id)
          .bind(2, observed.state.clock)
          .bind(3, observed.state.paused_until)
          .bind(4, std::max(fresh, observed.fresh_at))
          .bind_blob(5, limits)
          .run();
    }
    if (observation.throttled) {
      count_throttle(key, time);
    }
    return PauseStanding{standing.now, standing.paused_until, 0, standing.budget};
  });
}

} // namespace ratelimit::store
