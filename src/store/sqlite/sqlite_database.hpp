#pragma once

#include "core/time.hpp"
#include "store/creation.hpp"

#include <sqlite3.h>
#include <string>

namespace ratelimit::store::sqlite {

// The identity and version of our database files: `PRAGMA application_id` ("RLMT") and
// `PRAGMA user_version`.
inline constexpr std::int32_t k_application_id = 0x524c4d54;
inline constexpr std::int32_t k_schema_version = 8;

// An open ratelimit database: the SQLite connection, and the file descriptor whose flock
// serialises writers. Opening creates the file when it is missing (unless `creation` says
// never), with the mode the umask leaves of 0666, and refuses (with StoreError) a file that
// is not ours or has a newer schema, without writing to it. A database of an older schema
// of ours is upgraded in place, under the lock. `path` is a file name, never an SQLite URI
// nor ":memory:".
class SqliteDatabase {
public:
  SqliteDatabase(std::string path, core::Nanos lock_timeout,
                 Creation creation = Creation::if_missing);
  ~SqliteDatabase();
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  sqlite3* handle() const { return m_db; }
  const std::string& path() const { return m_path; }

  // Takes the writers' lock, waiting at most the lock timeout; throws StoreError then.
  void lock();
  void unlock();

  // Runs `sql` (no rows expected); throws StoreError.
  void execute(const char* sql);

  // Runs `body` as one write transaction (BEGIN IMMEDIATE ... COMMIT) under the writers'
  // lock, and returns what it returns; rolls back and rethrows when it throws.
  template <typename Body>
  auto write_transaction(Body&& body) {
    // Parsed before the lock is taken: every process waiting for it would pay for that too.
    prepare_write_transaction();
    lock();
    struct Unlock {
      SqliteDatabase& database;
      ~Unlock() { database.unlock(); }
    } unlock_at_exit{*this};
    run(m_begin);
    try {
      auto result = body();
      run(m_commit);
      return result;
    } catch (...) {
      sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  // A StoreError for a SQLite call that failed with `rc`, with the reason
  // `sqlite_failure_reason` finds; a lock held too long names the lock timeout.
  [[noreturn]] void fail(std::string_view what, int rc) const;

private:
  void prepare_write_transaction();
  // Runs `statement`, which returns no rows, and resets it; throws StoreError.
  void run(sqlite3_stmt* statement);
  void open();
  void close();
  void create();
  void check_identity();
  void upgrade();

  // As the user gave it, for messages.
  std::string m_path;
  // The same file, named so that SQLite cannot read it as a URI or ":memory:".
  std::string m_file;
  core::Nanos m_lock_timeout;
  Creation m_creation;
  // SQLite's busy timeout, the lock timeout in ms (the WAL hook restores it).
  int m_busy_timeout_ms = 0;
  int m_fd = -1;
  sqlite3* m_db = nullptr;
  sqlite3_stmt* m_begin = nullptr;  // BEGIN IMMEDIATE
  sqlite3_stmt* m_commit = nullptr; // COMMIT
  // The schema version in the file's header when it was opened.
  std::int32_t m_version = k_schema_version;
};

} // namespace ratelimit::store::sqlite
