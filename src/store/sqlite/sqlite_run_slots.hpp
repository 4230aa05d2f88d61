#pragma once

#include "store/run_slots.hpp"
#include "store/sqlite/sqlite_database.hpp"
#include "util/liveness_file.hpp"

#include <functional>
#include <memory>

namespace ratelimit::store::sqlite {

// Run slots in the SQLite database (table `runs`), for the processes of one host.
//
// Each command keeps a liveness file locked in the directory `<database>.runs` from joining
// to finishing: the kernel releases its lock, and wakes the directory's watchers, however
// the process ends, so a dead holder's slot is freed at the next look, and nobody polls.
// A waiter watches that directory with inotify and looks again, in one transaction, when a
// file of its key's is closed after writing or removed: a holder finished, died, or started
// (it touches its file), or a waiter left. Waiters are served in arrival order (`id`);
// dead ones found ahead are removed. Every process on the key is woken by each such event
// and looks once: a cost of one transaction per waiter per event, bounded by the waiters.
class SqliteRunSlots final : public RunSlots {
public:
  using Clock = std::function<core::Nanos()>;

  SqliteRunSlots(SqliteDatabase& database, Clock clock);
  ~SqliteRunSlots() override;

  StartAnswer join(std::string_view key, std::int64_t cost, core::Nanos hold,
                   std::span<const core::RunCap> caps) override;
  StartAnswer try_start(std::span<const core::RunCap> caps) override;
  int wait_for_change(core::Nanos timeout, util::InterruptSignals& signals) override;
  void leave() override;
  void finish() override;

  // The live entries of `keys` (all keys when empty), read from a snapshot: dead ones are
  // left out, not removed.
  static std::vector<RunEntry> entries(SqliteDatabase& database, std::span<const std::string> keys);

  // Forgets, inside the caller's transaction, the commands that hold nothing at `now` under
  // the caps they ran with: ended a hold ago, or dead (a dead holder with a hold counts as
  // ended now).
  static void collect(SqliteDatabase& database, core::Nanos now);

  // The directory of the liveness files of `database`.
  static std::string directory_of(const SqliteDatabase& database);

private:
  struct Row {
    std::int64_t id = 0;
    std::int64_t cost = 1;
    core::Nanos hold = 0;
    std::string token;
    std::optional<core::Nanos> started;
    std::optional<core::Nanos> ended;
  };

  template <typename Body>
  auto transaction(Body&& body);
  // Writes this command's row, waiting or `started`.
  void insert(core::Nanos now, std::optional<core::Nanos> started);
  StartAnswer attempt(std::span<const core::RunCap> caps);
  // The end of the key's pause running at `time`, or 0.
  core::Nanos paused_until(core::Nanos time);
  // Forgets a dead command: a waiter's row, or a holder's as ended at `now`.
  void bury(const Row& row, core::Nanos now);
  bool alive(const Row& row) const;
  core::Nanos now();
  // Touches the liveness file after a start that someone behind may be waiting for.
  void wake_behind();

  SqliteDatabase& m_database;
  Clock m_clock;
  std::string m_directory;
  std::string m_key;
  // The prefix of this key's liveness files: a hash of the key.
  std::string m_prefix;
  std::int64_t m_cost = 1;
  core::Nanos m_hold = 0;
  std::int64_t m_id = 0;
  bool m_started = false;
  bool m_waiters_behind = false;
  std::unique_ptr<util::LivenessFile> m_file;
  std::unique_ptr<util::DirectoryWatch> m_watch;
};

} // namespace ratelimit::store::sqlite
