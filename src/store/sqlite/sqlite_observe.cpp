// What a server answered, applied to a key of a SqliteStore (`observe`): the key's row, made
// for it when the answer leaves something to hold, and for an answer 429 or 503 the key's
// counters.
#include "store/sqlite/sqlite_store.hpp"

#include "core/key_life.hpp"
#include "store/sqlite/sqlite_grant_log.hpp"
#include "store/sqlite/sqlite_key_row.hpp"
#include "store/sqlite/state_codec.hpp"

#include <algorithm>

namespace ratelimit::store::sqlite {

PauseStanding SqliteStore::observe(std::string_view key, const core::Observation& observation) {
  return transaction([&] {
    Row row = find(key).value_or(Row{});
    core::Nanos time = now();
    SqliteGrantLog log(m_grant_log, row.id);
    core::KeyOutcome outcome = core::observe_key(stored_state(row), time, observation, log);
    const core::KeyState& observed = outcome.state;
    core::Nanos fresh = fresh_at(outcome.fresh_at);
    if (outcome.write == core::KeyWrite::nothing) {
      // An answer that holds nothing (a policy alone, a pause of 0): no key is made for it.
    } else if (row.id == 0) {
      // No algorithm and no limits: the first call on the key gives them.
      insert(key, "", observed, fresh, {}, 0);
    } else {
      // The limits as they were; the pause and the server word as they are now.
      Statement& update = prepared(m_update_observed,
                                   "UPDATE keys SET clock = ?2, paused_until = ?3, fresh_at = ?4, "
                                   "server = ?5 WHERE id = ?1");
      update.bind(1, row.id)
          .bind(2, observed.clock)
          .bind(3, observed.paused_until)
          .bind(4, std::max(fresh, row.fresh_at));
      std::string server = encode_server_word(observed.server); // bound, not copied
      bind_server(update, 5, server);
      update.run();
    }
    if (observation.throttled) {
      count_throttle(key, time);
    }
    const core::Decision& standing = outcome.decision;
    return PauseStanding{standing.now, standing.paused_until, 0, standing.budget, 0};
  });
}

} // namespace ratelimit::store::sqlite
