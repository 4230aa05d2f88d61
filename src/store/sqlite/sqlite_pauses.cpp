// The pauses of a SqliteStore: the paused_until column of a key's row, which a key that
// holds nothing else keeps alone (algorithm '', no limits).
#include "store/sqlite/sqlite_store.hpp"

#include "store/sqlite/sqlite_grant_log.hpp"
#include "store/sqlite/sqlite_key_row.hpp"
#include "store/sqlite/state_codec.hpp"

#include <algorithm>

namespace ratelimit::store::sqlite {

PauseStanding SqliteStore::pause(std::string_view key, core::Nanos duration) {
  return transaction([&] {
    Row row = find(key).value_or(Row{});
    SqliteGrantLog log(m_grant_log, row.id);
    core::KeyOutcome outcome = core::pause_key(stored_state(row), now(), duration, log);
    const core::KeyState& paused = outcome.state;
    core::Nanos fresh = fresh_at(outcome.fresh_at);
    if (outcome.write == core::KeyWrite::nothing) {
      // A pause of 0 (Retry-After: 0) holds nothing: no key is made for it.
    } else if (row.id == 0) {
      // No algorithm and no limits: the first call on the key gives them.
      insert(key, "", paused, fresh, {}, 0);
    } else {
      prepared(m_update_paused,
               "UPDATE keys SET clock = ?2, paused_until = ?3, fresh_at = ?4 WHERE id = ?1")
          .bind(1, row.id)
          .bind(2, paused.clock)
          .bind(3, paused.paused_until)
          .bind(4, std::max(fresh, row.fresh_at))
          .run();
    }
    return PauseStanding{outcome.decision.now, outcome.decision.paused_until, 0, {}, 0};
  });
}

PauseStanding SqliteStore::pause_of(std::string_view key, const core::Grant* grant) {
  // Under the writers' lock, with the clock read inside it, as `pause` reads its own: a
  // pause is in force from the instant it says it begins. Read outside the lock, a waiter
  // whose slot fell between a pause's reading of the clock and its commit would go ahead
  // inside the pause.
  // Prepared before the lock is taken, as a decision's statements are.
  Statement& select =
      prepared(m_select_pause, "SELECT clock, paused_until, server FROM keys WHERE name = ?1");
  return transaction([&] {
    select.bind_blob(1, key);
    PauseStanding standing{now(), 0, 0, {}, 0};
    if (select.step()) {
      standing.now = std::max(standing.now, select.column_int(0));
      core::Nanos until = select.column_int(1);
      standing.paused_until = until > standing.now ? until : 0;
      // A server word that cannot be read holds nobody here; the decision after says so.
      if (auto server = decode_server_word(select.column_blob(2))) {
        standing.overdrawn_until = core::overdrawn_until(*server, standing.now);
        if (grant) {
          standing.probe_until =
              core::probe_held_until(*server, standing.now, grant->seq, grant->at);
        }
      }
    }
    select.reset();
    return standing;
  });
}

} // namespace ratelimit::store::sqlite
