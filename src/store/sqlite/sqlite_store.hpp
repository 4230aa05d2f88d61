#pragma once

#include "core/key_life.hpp"
#include "store/sqlite/sqlite_database.hpp"
#include "store/sqlite/sqlite_grant_log.hpp"
#include "store/sqlite/sqlite_statement.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

#include <functional>
#include <memory>
#include <optional>

namespace ratelimit::store::sqlite {

// Keys in one SQLite file shared by every process on the machine. Each call that writes is
// a `BEGIN IMMEDIATE ... COMMIT` inside an flock on the file, with the system clock read
// once the lock is held; `status` only reads, from a snapshot, without the lock.
//
// Decisions also collect garbage, so that a database of one-off keys does not grow without
// bound: one decision in `k_gc_one_in`, chosen at random, forgets at most `k_gc_batch` keys
// among those whose state has become a fresh key's, found through an index of the time each
// key becomes fresh.
//
// Every decision also adds itself to the key's counters, in the same transaction and the same
// statement as its state: the counters are columns of the key's row, so that a decision
// writes one row and one page, also a denial, which otherwise writes nothing. A row collected
// leaves its counters in a table by key name, which a row made again for the key takes them
// from; the collections forget the counters there that no decision has touched for
// `k_counter_retention`.
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
  PauseStanding pause_of(std::string_view key, const core::Grant* grant = nullptr) override;
  PauseStanding observe(std::string_view key, const core::Observation& observation) override;
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
  // Makes the row of `key`, which has none, holding `state` (with `algorithm`, '' for a
  // pause alone) and `fresh_at`, and the key's counters: those the counters table kept, plus
  // `tally` counted at `now` (0: nothing counted). Returns its id.
  std::int64_t insert(std::string_view key, std::string_view algorithm, const core::KeyState& state,
                      core::Nanos fresh_at, KeyCounters tally, core::Nanos now);
  // Stores `row`, the time its state becomes a fresh key's when that has moved, and adds
  // `tally` to its counters, touched at `now`.
  void write(const Row& row, core::Nanos fresh_at, const KeyCounters& tally, core::Nanos now);
  // The statement of `write` and of `count` on a row.
  Statement& update_statement();
  Statement& set_fresh_at_statement();
  // Forgets the row `id` and its log; its counters go to the counters table.
  void erase(std::int64_t id);
  // The state of `row` for the core, a copy: none for no row (id 0).
  static std::optional<core::KeyState> stored_state(const Row& row);
  // Writes what a call on `key`, whose row is `row` (id 0: none), left to write, and adds
  // `tally` to the key's counters, touched at `now`; the outcome's state is moved into `row`.
  void write_outcome(std::string_view key, Row& row, core::KeyOutcome& outcome,
                     const KeyCounters& tally, core::Nanos now);
  // What `decision` adds to its key's counters.
  static KeyCounters counted(const core::Decision& decision);
  // When counters touched at `now` were last touched, as stored (rounded up); 0 for 0.
  static core::Nanos touched_at(core::Nanos now);
  // Adds an answer 429 or 503 observed at `now` to the counters of `key`.
  void count_throttle(std::string_view key, core::Nanos now);
  // Binds the encoded server word `server` (state_codec.hpp) to `parameter` of `statement`.
  static void bind_server(Statement& statement, int parameter, const std::string& server);
  // Binds `tally` and `touched` to the parameters `first` to `first` + 3 of `statement`.
  static void bind_counters(Statement& statement, int first, const KeyCounters& tally,
                            core::Nanos touched);
  // Adds `tally`, counted at `now`, to the counters of `key`: in its row `stored`, which
  // keeps the state it holds, or in the counters table when it has none (id 0).
  void count(std::string_view key, const Row& stored, const KeyCounters& tally, core::Nanos now);
  // Takes the counters of `key` out of the counters table, adding them to `tally` and
  // `touched`, for the row about to be made for it.
  void take_counters_of(std::string_view key, KeyCounters& tally, core::Nanos& touched);
  // Adds the counters of the row `id` to the counters table, before the row goes.
  void keep_counters_of(std::int64_t id);
  KeyCounters counters_of(std::string_view key);
  Statement& forget_stale_counters_statement();
  // Forgets the counters untouched since `now` less the retention, at most `limit` of them.
  void forget_stale_counters(core::Nanos now, std::int64_t limit);
  // Prepares the statements of `collect_some_garbage`.
  void prepare_collection();
  // Forgets at most `k_gc_batch` keys that are fresh at `now`.
  void collect_some_garbage(core::Nanos now);
  [[noreturn]] void damaged(std::string_view key) const;
  Statement& prepared(std::unique_ptr<Statement>& slot, const char* sql);

  Clock m_clock;
  SqliteDatabase m_database;
  GrantLogStatements m_grant_log;
  Statement m_select;
  // Prepared on first use: a process makes one decision and needs one or two of them.
  std::unique_ptr<Statement> m_insert;
  std::unique_ptr<Statement> m_update;
  std::unique_ptr<Statement> m_select_id;
  std::unique_ptr<Statement> m_erase_log;
  std::unique_ptr<Statement> m_erase_key;
  std::unique_ptr<Statement> m_due;
  std::unique_ptr<Statement> m_set_fresh_at;
  std::unique_ptr<Statement> m_adopt;
  std::unique_ptr<Statement> m_update_paused;
  std::unique_ptr<Statement> m_select_pause;
  std::unique_ptr<Statement> m_upsert_counters;
  std::unique_ptr<Statement> m_select_counters;
  std::unique_ptr<Statement> m_keep_counters;
  std::unique_ptr<Statement> m_add_to_row;
  std::unique_ptr<Statement> m_counters_of;
  std::unique_ptr<Statement> m_erase_counters;
  std::unique_ptr<Statement> m_forget_stale_counters;
  std::unique_ptr<Statement> m_update_observed;
  std::unique_ptr<Statement> m_throttle_row;
  std::unique_ptr<Statement> m_throttle_counters;
};

} // namespace ratelimit::store::sqlite
