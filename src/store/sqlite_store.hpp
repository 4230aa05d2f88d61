#pragma once

#include "core/key_life.hpp"
#include "store/sqlite_database.hpp"
#include "store/sqlite_statement.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

#include <functional>
#include <memory>
#include <optional>

namespace ratelimit::store {

// Keys in one SQLite file shared by every process on the machine. Each call that writes is
// a `BEGIN IMMEDIATE ... COMMIT` inside an flock on the file, with the system clock read
// once the lock is held; `status` only reads, from a snapshot, without the lock.
//
// Decisions also collect garbage, so that a database of one-off keys does not grow without
// bound: one decision in `k_gc_one_in`, chosen at random, forgets at most `k_gc_batch` keys
// among those whose state has become a fresh key's, found through an index of the time each
// key becomes fresh.
//
// Every decision also adds itself to the key's counters, in the same transaction: one update
// of one small row (an upsert for a new row, or about once an hour), also for a denial, which
// otherwise writes nothing. The counters are
// kept by key name, apart from the state, so that collecting the state leaves them; the
// collections forget the counters that no decision has touched for `k_counter_retention`.
class SqliteStore final : public Store {
public:
  static constexpr int k_gc_one_in = 16;
  static constexpr int k_gc_batch = 32;

  // The clock read for every decision, give-back, status and collection: the system clock in
  // production, a fake one in tests, so that the store can be compared with the core at
  // explicit times. Stored once; calling it allocates nothing.
  using Clock = std::function<core::Nanos()>;

  SqliteStore(std::string path, core::Nanos lock_timeout, Creation creation = Creation::if_missing,
              Clock clock = util::realtime_nanos);
  ~SqliteStore() override;

  core::Decision decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                        std::span<const core::Limit> limits, core::Request request) override;
  void give_back(std::string_view key, core::Algorithm algorithm,
                 std::span<const core::Limit> limits, const core::Grant& grant) override;
  std::vector<KeyStatus> status(std::span<const std::string> keys) override;
  std::vector<NamedCounters> counters(std::span<const std::string> keys) override;
  void add_to_counters(std::string_view key, bool granted, core::Nanos waited) override;
  std::size_t reset(std::span<const std::string> keys, bool all) override;
  PauseStanding pause(std::string_view key, core::Nanos duration) override;
  PauseStanding pause_of(std::string_view key) override;
  std::vector<std::string> collect_garbage() override;
  core::Nanos now() override;
  std::unique_ptr<RunSlots> run_slots(core::Nanos lease) override;
  std::vector<RunEntry> run_entries(std::span<const std::string> keys) override;

private:
  struct Row {
    std::int64_t id = 0; // 0: no row
    core::KeyState state;
    core::Nanos fresh_at = 0; // as stored
  };

  // Runs `body` as one write transaction under the lock; rolls back if it throws.
  template <typename Body>
  auto transaction(Body&& body) {
    return m_database.write_transaction(std::forward<Body>(body));
  }
  // Runs `body` in a read transaction: a consistent snapshot, without the writers' lock.
  template <typename Body>
  auto read_transaction(Body&& body) {
    m_database.execute("BEGIN");
    try {
      auto result = body();
      m_database.execute("COMMIT");
      return result;
    } catch (...) {
      sqlite3_exec(m_database.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::optional<Row> find(std::string_view key);
  // The row of `key`, created with a fresh state of `algorithm` when missing.
  Row find_or_create(std::string_view key, core::Algorithm algorithm);
  // Stores `row`, and the time its state becomes a fresh key's when that has moved.
  void write(const Row& row, core::Nanos fresh_at);
  // The state of `row` for the core, moved out of it; none for no row (id 0).
  static std::optional<core::KeyState> take_state(Row& row);
  // Writes what a call on `key`, whose row is `row` (id 0: none), left to write; the
  // outcome's state is moved into `row`.
  void write_outcome(std::string_view key, Row& row, core::KeyOutcome& outcome);
  void erase(std::int64_t id);
  // Adds `decision` on `key`, made at `now`, to the key's counters.
  void count(std::string_view key, const core::Decision& decision, core::Nanos now);
  KeyCounters counters_of(std::string_view key);
  // Forgets the counters untouched since `now` less the retention, at most `limit` of them.
  void forget_stale_counters(core::Nanos now, std::int64_t limit);
  // Forgets at most `k_gc_batch` keys that are fresh at `now`.
  void collect_some_garbage(core::Nanos now);
  [[noreturn]] void damaged(std::string_view key) const;
  Statement& prepared(std::unique_ptr<Statement>& slot, const char* sql);

  Clock m_clock;
  SqliteDatabase m_database;
  Statement m_select;
  // Prepared on first use: a process makes one decision and needs one or two of them.
  std::unique_ptr<Statement> m_insert;
  std::unique_ptr<Statement> m_update;
  std::unique_ptr<Statement> m_update_fresh_at;
  std::unique_ptr<Statement> m_select_id;
  std::unique_ptr<Statement> m_erase_log;
  std::unique_ptr<Statement> m_erase_key;
  std::unique_ptr<Statement> m_due;
  std::unique_ptr<Statement> m_set_fresh_at;
  std::unique_ptr<Statement> m_adopt;
  std::unique_ptr<Statement> m_insert_paused;
  std::unique_ptr<Statement> m_update_paused;
  std::unique_ptr<Statement> m_select_pause;
  std::unique_ptr<Statement> m_count;
  std::unique_ptr<Statement> m_upsert_counters;
  std::unique_ptr<Statement> m_select_counters;
  std::unique_ptr<Statement> m_erase_counters;
  std::unique_ptr<Statement> m_forget_stale_counters;
};

} // namespace ratelimit::store
