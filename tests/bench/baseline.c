/* The baseline a decision is measured against: a minimal C program doing the same SQLite
 * transaction as `ratelimit try KEY -r N/PERIOD` (token bucket), with every trick the tool
 * uses: WAL set once at creation, no checkpoint on close, a persistent WAL truncated
 * once long, synchronous=NORMAL, an flock around BEGIN IMMEDIATE ... COMMIT, prepared
 * statements.
 *
 *   baseline DB KEY COUNT PERIOD_SECONDS [early]      exit 0 granted, 1 limited, 3 error
 *
 * It prepares its statements once the lock is held, as the tool did when this was written;
 * with `early`, before it takes the lock, as the tool does now (for the critical section's
 * benchmark, tests/bench/lock_hold_bench.sh). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* As the tool does: truncate the WAL, under the lock, once a commit leaves it long. The
 * autocheckpoint would copy the whole WAL again after every commit, since each process
 * rebuilds the WAL index and sees nothing of it checkpointed. */
static int truncate_long_wal(void *unused, sqlite3 *db, const char *schema, int frames) {
  (void)unused;
  if (frames >= 128) {
    sqlite3_busy_timeout(db, 0);
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(db, 10000);
  }
  return SQLITE_OK;
}

static void prepare(sqlite3 *db, sqlite3_stmt **select, sqlite3_stmt **upsert) {
  sqlite3_prepare_v2(db, "SELECT tat FROM buckets WHERE key = ?1", -1, select, NULL);
  sqlite3_prepare_v2(db,
                     "INSERT INTO buckets (key, tat) VALUES (?1, ?2) "
                     "ON CONFLICT (key) DO UPDATE SET tat = excluded.tat",
                     -1, upsert, NULL);
}

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    return 2;
  }
  int early = argc == 6;
  const char *path = argv[1], *key = argv[2];
  int64_t count = atoll(argv[3]);
  int64_t interval = (int64_t)(atof(argv[4]) * 1e9) / count;
  int64_t burst = count;
  sqlite3 *db;
  int fresh = access(path, F_OK) != 0;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    return 3;
  }
  if (fresh) {
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL;"
                 "CREATE TABLE IF NOT EXISTS buckets (key BLOB PRIMARY KEY, tat INTEGER)",
                 0, 0, 0);
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
  int persist = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  sqlite3_busy_timeout(db, 10000);
  sqlite3_exec(db, "PRAGMA synchronous=NORMAL", 0, 0, 0);
  sqlite3_wal_hook(db, truncate_long_wal, NULL);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  sqlite3_stmt *select = NULL, *upsert = NULL;
  if (early) {
    prepare(db, &select, &upsert);
  }
  flock(fd, LOCK_EX);
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0) != SQLITE_OK) {
    return 3;
  }
  if (!early) {
    prepare(db, &select, &upsert);
  }
  sqlite3_bind_blob(select, 1, key, (int)__builtin_strlen(key), SQLITE_STATIC);
  int64_t tat = 0;
  if (sqlite3_step(select) == SQLITE_ROW) {
    tat = sqlite3_column_int64(select, 0);
  }
  int64_t now = now_ns();
  int64_t start = tat > now ? tat : now;
  int allowed = start + interval - burst * interval <= now;
  if (allowed) {
    sqlite3_bind_blob(upsert, 1, key, (int)__builtin_strlen(key), SQLITE_STATIC);
    sqlite3_bind_int64(upsert, 2, start + interval);
    if (sqlite3_step(upsert) != SQLITE_DONE) {
      return 3;
    }
  }
  sqlite3_finalize(select);
  sqlite3_finalize(upsert);
  if (sqlite3_exec(db, "COMMIT", 0, 0, 0) != SQLITE_OK) {
    return 3;
  }
  flock(fd, LOCK_UN);
  close(fd);
  sqlite3_close(db);
  return allowed ? 0 : 1;
}
