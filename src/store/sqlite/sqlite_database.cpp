#include "store/sqlite/sqlite_database.hpp"

#include "store/sqlite/sqlite_error.hpp"
#include "store/sqlite/sqlite_runs_schema.hpp"
#include "store/sqlite/sqlite_upgrade.hpp"
#include "store/store.hpp"
#include "util/errno_text.hpp"
#include "util/file_lock.hpp"
#include "util/paths.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace ratelimit::store::sqlite {

namespace {

// keys.throttled counts the answers 429 and 503 observed for the key, with its other
// counters; keys.server holds what the servers said of it besides a pause (its grant
// sequence, server budget, awaited answers, policies and adaptive rate; state_codec.hpp),
// NULL for nothing.
// Said here rather than in the DDL: SQLite parses the stored DDL, comments included, when a
// process first reads the database, and every `try` is such a process.
constexpr const char* k_schema = R"sql(
PRAGMA application_id = 1380732244;
PRAGMA user_version = 8;
PRAGMA journal_mode = WAL;
CREATE TABLE keys (
  id INTEGER PRIMARY KEY,
  name BLOB NOT NULL UNIQUE,
  algorithm TEXT NOT NULL,
  clock INTEGER NOT NULL,
  limits BLOB NOT NULL,
  -- When the state becomes a fresh key's (the key's clock plus its reset_after): garbage
  -- collection finds the keys it can forget in this index without reading the others.
  fresh_at INTEGER NOT NULL DEFAULT 0,
  -- Sliding log: the longest period a call on the key has named, how long its log keeps.
  log_period INTEGER NOT NULL DEFAULT 0,
  -- Until when the key grants nothing (`ratelimit pause`), in ns since the epoch; 0: never
  -- paused. A key that holds only a pause has the algorithm '' and no limits.
  paused_until INTEGER NOT NULL DEFAULT 0,
  granted INTEGER NOT NULL DEFAULT 0,
  limited INTEGER NOT NULL DEFAULT 0,
  waited_us INTEGER NOT NULL DEFAULT 0,
  touched_at INTEGER NOT NULL DEFAULT 0,
  -- granted to touched_at: the key's counters (`status`, `metrics`), in its row so that a
  -- decision writes one row; the counters table keeps those of the names that have no row.
  throttled INTEGER NOT NULL DEFAULT 0,
  server BLOB
);
CREATE INDEX keys_by_fresh_at ON keys (fresh_at);
-- A sliding-log key's one log, whatever limits its calls named.
CREATE TABLE grant_log (
  key_id INTEGER NOT NULL,
  cumulative INTEGER NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (key_id, cumulative)
) WITHOUT ROWID;
CREATE INDEX grant_log_by_time ON grant_log (key_id, at);
)sql";

static_assert(k_application_id == 1380732244, "k_schema spells the application id");

std::int32_t big_endian_at(const unsigned char* bytes, std::size_t offset) {
  return static_cast<std::int32_t>(
      (std::uint32_t{bytes[offset]} << 24) | (std::uint32_t{bytes[offset + 1]} << 16) |
      (std::uint32_t{bytes[offset + 2]} << 8) | std::uint32_t{bytes[offset + 3]});
}

// The WAL is truncated once a commit leaves this many frames (4 KiB pages) in it.
constexpr int k_wal_truncate_frames = 128;

// Each process is usually the only one with the database open, so each one rebuilds the
// WAL index from the WAL file when it opens, and then sees nothing of the WAL as
// checkpointed. SQLite's autocheckpoint would copy the whole WAL again after every commit
// (three fsyncs) and never restart it, and the WAL would grow with every decision. Instead
// the committing process, still under the lock, checkpoints and truncates the WAL once it
// is long: the fsyncs are paid once in many decisions, and every open reads a short WAL.
int truncate_long_wal(void* lock_timeout_ms, sqlite3* db, const char* schema, int frames) {
  if (frames >= k_wal_truncate_frames) {
    // Never wait for a reader here (`status` may be reading): the next commit tries again.
    sqlite3_busy_timeout(db, 0);
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    sqlite3_busy_timeout(db, *static_cast<int*>(lock_timeout_ms));
  }
  // The commit has happened whatever the checkpoint did.
  return SQLITE_OK;
}

// SQLite's memory statistics, on by default, take a global mutex and update counters at
// every allocation, and opening a connection and preparing its statements makes thousands of
// them: a sixth of the instructions SQLite runs for a decision. Nothing here reads them. Once
// per process, before SQLite initializes itself (afterwards the call fails, harmlessly).
void skip_memory_statistics() {
  static const int configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)configured;
}

// `path` under a name that SQLite reads as a plain file name: it takes a name that starts
// with "file:" for a URI when built with SQLITE_USE_URI, and ":memory:" always for a
// database in memory. "./" in front changes neither the file nor what the user sees.
std::string plain_file_name(const std::string& path) {
  if (path.starts_with("file:") || path.starts_with(':')) {
    return "./" + path;
  }
  return path;
}

} // namespace

SqliteDatabase::SqliteDatabase(std::string path, core::Nanos lock_timeout, Creation creation)
    : m_path(std::move(path)), m_file(plain_file_name(m_path)), m_lock_timeout(lock_timeout),
      m_creation(creation) {
  try {
    open();
  } catch (...) {
    // No destructor runs for a constructor that throws: close what was opened here.
    close();
    throw;
  }
}

void SqliteDatabase::open() {
  skip_memory_statistics();
  m_fd = ::open(m_file.c_str(), O_RDWR | O_CLOEXEC);
  if (m_fd < 0 && errno == ENOENT && m_creation == Creation::if_missing) {
    create();
    m_fd = ::open(m_file.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (m_fd < 0) {
    throw StoreError(
        fmt::format("cannot open database \"{}\": {}", m_path, util::describe_errno(errno)));
  }
  check_identity();
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  if (int rc = sqlite3_open_v2(m_file.c_str(), &m_db, flags, nullptr); rc != SQLITE_OK) {
    fail("cannot open the database", rc);
  }
  // Writers queue on the flock; SQLite's own busy handler covers readers and checkpoints.
  m_busy_timeout_ms = static_cast<int>(
      std::min<core::Nanos>(m_lock_timeout / core::k_nanos_per_milli, 1'000'000'000));
  sqlite3_busy_timeout(m_db, m_busy_timeout_ms);
  // Every process is a database's last connection when it closes: by default it would
  // checkpoint and delete the WAL there (several fsyncs), and the next process would create
  // it again (two more). Keep the WAL, and truncate it only when it is long.
  sqlite3_db_config(m_db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  int persist_wal = 1;
  sqlite3_file_control(m_db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
  sqlite3_wal_hook(m_db, truncate_long_wal, &m_busy_timeout_ms);
  execute("PRAGMA synchronous = NORMAL");
  if (m_version < k_schema_version) {
    upgrade();
  }
}

void SqliteDatabase::upgrade() {
  write_transaction([this] {
    // Another process may have upgraded it since the header was read.
    sqlite3_stmt* statement = nullptr;
    std::int64_t version = k_schema_version;
    if (sqlite3_prepare_v2(m_db, "PRAGMA user_version", -1, &statement, nullptr) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW) {
      version = sqlite3_column_int64(statement, 0);
    }
    sqlite3_finalize(statement);
    if (version == 1) {
      upgrade_from_version_1(m_db);
      version = 2;
    }
    // Version 3: a key's pause, its counters, and the run slots.
    if (version == 2) {
      upgrade_from_version_2(m_db);
      upgrade_from_version_2_runs(m_db);
      version = 3;
    }
    // Version 4: the limits a bucket remembers follow its others in `keys.limits`, their
    // count negated (state_codec.hpp); a version-3 row has none, and reads the same. The
    // number alone changes, so that an older ratelimit refuses the file rather than
    // reading those limits as damaged.
    if (version == 3) {
      execute("PRAGMA user_version = 4;");
      version = 4;
    }
    // Version 5: a window key's limits are preceded by the cost it has granted
    // (state_codec.hpp), it remembers the limits its last call did not name, and
    // a sliding window's first slot holds its latest grant, of which the window's start is
    // the start. A version-4 row reads the same, what it granted unknown. The number alone
    // changes, so that an older ratelimit refuses the file rather than reading those rows
    // as damaged, or a sliding log's remembered limits as its own.
    if (version == 4) {
      execute("PRAGMA user_version = 5;");
      version = 5;
    }
    // Version 6: a key's counters in its row (sqlite_upgrade.hpp).
    if (version == 5) {
      upgrade_from_version_5(m_db);
      version = 6;
    }
    // Version 7: the servers' word on a key, and its answers 429 and 503 counted.
    if (version == 6) {
      upgrade_from_version_6(m_db);
      version = 7;
    }
    // Version 8: a key's adaptive rate follows its server word in `keys.server`
    // (state_codec.hpp); a version-7 row has none, and reads the same. The number alone
    // changes, so that an older ratelimit refuses the file rather than reading those rows
    // as damaged.
    if (version == 7) {
      execute("PRAGMA user_version = 8;");
      version = 8;
    }
    return version;
  });
}

SqliteDatabase::~SqliteDatabase() {
  close();
}

void SqliteDatabase::close() {
  sqlite3_finalize(m_begin);
  sqlite3_finalize(m_commit);
  m_begin = m_commit = nullptr;
  sqlite3_close_v2(m_db);
  m_db = nullptr;
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

void SqliteDatabase::create() {
  try {
    util::make_directories(util::parent_directory(m_file));
  } catch (const std::runtime_error& error) {
    throw StoreError(fmt::format("cannot create database \"{}\": {}", m_path, error.what()));
  }
  // Built aside and linked into place, so that no process ever sees a half-made file and
  // two first callers cannot both create one; link() never replaces an existing file.
  std::string scratch = fmt::format("{}.new-{}", m_file, ::getpid());
  auto remove_scratch = [&] {
    // With its journals: a failed schema write (a full disk) may leave them behind.
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      ::unlink((scratch + suffix).c_str());
    }
  };
  remove_scratch();
  // Created here rather than by SQLite, which would give it 0644 whatever the umask: with
  // umask 002 a group shares the database. Its -wal and -shm files take its mode.
  int scratch_fd = ::open(scratch.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (scratch_fd < 0) {
    int saved = errno;
    throw StoreError(
        fmt::format("cannot create database \"{}\": {}", m_path, util::describe_errno(saved)));
  }
  ::close(scratch_fd);
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(scratch.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, k_schema, nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, k_counters_schema, nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, k_runs_schema, nullptr, nullptr, nullptr);
  }
  std::string message = rc == SQLITE_OK ? "" : sqlite_failure_reason(db, rc, m_path);
  sqlite3_close_v2(db);
  if (rc != SQLITE_OK) {
    remove_scratch();
    throw StoreError(fmt::format("cannot create database \"{}\": {}", m_path, message));
  }
  if (::link(scratch.c_str(), m_file.c_str()) != 0 && errno != EEXIST) {
    int saved = errno;
    remove_scratch();
    throw StoreError(
        fmt::format("cannot create database \"{}\": {}", m_path, util::describe_errno(saved)));
  }
  remove_scratch();
}

void SqliteDatabase::check_identity() {
  // Read straight from the file header, before SQLite may touch the file: a file that is
  // not ours must not be written, not even a journal of it.
  std::array<unsigned char, 100> header{};
  ssize_t got = ::pread(m_fd, header.data(), header.size(), 0);
  auto refuse = [&](std::string_view why) {
    throw StoreError(
        fmt::format("\"{}\" is not a ratelimit database: {}; give another --db", m_path, why));
  };
  if (got < 0) {
    throw StoreError(
        fmt::format("cannot read database \"{}\": {}", m_path, util::describe_errno(errno)));
  }
  if (got == 0) {
    refuse("it is empty");
  }
  if (got < static_cast<ssize_t>(header.size()) ||
      std::memcmp(header.data(), "SQLite format 3", 16) != 0) {
    refuse("it is not an SQLite database");
  }
  if (big_endian_at(header.data(), 68) != k_application_id) {
    refuse("it is another application's SQLite database");
  }
  std::int32_t version = big_endian_at(header.data(), 60);
  if (version > k_schema_version) {
    throw StoreError(fmt::format("database \"{}\" has schema version {}, newer than this "
                                 "ratelimit reads ({}); use a newer ratelimit",
                                 m_path, version, k_schema_version));
  }
  if (version < 1) {
    refuse(fmt::format("unknown schema version {}", version));
  }
  m_version = version;
}

void SqliteDatabase::lock() {
  switch (util::lock_exclusive(m_fd, m_lock_timeout)) {
  case util::LockResult::locked:
    return;
  case util::LockResult::timed_out:
    throw StoreError(fmt::format("database \"{}\" is locked by another process for longer than "
                                 "the lock timeout ({}); see --lock-timeout",
                                 m_path, core::format_seconds(m_lock_timeout)));
  case util::LockResult::failed:
    break;
  }
  throw StoreError(
      fmt::format("cannot lock database \"{}\": {}", m_path, util::describe_errno(errno)));
}

void SqliteDatabase::unlock() {
  util::unlock(m_fd);
}

void SqliteDatabase::prepare_write_transaction() {
  for (auto [statement, sql] : {std::pair{&m_begin, "BEGIN IMMEDIATE"}, {&m_commit, "COMMIT"}}) {
    if (*statement == nullptr) {
      if (int rc = sqlite3_prepare_v3(m_db, sql, -1, SQLITE_PREPARE_PERSISTENT, statement, nullptr);
          rc != SQLITE_OK) {
        fail("cannot use the database", rc);
      }
    }
  }
}

void SqliteDatabase::run(sqlite3_stmt* statement) {
  int rc = sqlite3_step(statement);
  sqlite3_reset(statement);
  if (rc != SQLITE_DONE) {
    fail("cannot use the database", rc);
  }
}

void SqliteDatabase::execute(const char* sql) {
  if (int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) {
    fail("cannot use the database", rc);
  }
}

void SqliteDatabase::fail(std::string_view what, int rc) const {
  if ((rc & 0xff) == SQLITE_BUSY) {
    throw StoreError(fmt::format("database \"{}\" is locked by another process for longer than "
                                 "the lock timeout ({}); see --lock-timeout",
                                 m_path, core::format_seconds(m_lock_timeout)));
  }
  throw_sqlite_error(m_db, rc, what, m_path);
}

} // namespace ratelimit::store::sqlite
