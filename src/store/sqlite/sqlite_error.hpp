#pragma once

#include <sqlite3.h>
#include <string>
#include <string_view>

namespace ratelimit::store::sqlite {

// Why the last SQLite call on `db` failed with `rc`, for a user: "the disk is full" (also
// when SQLite reports only an I/O error, as it does when the -shm or -wal file cannot
// grow), "the file system is read-only", "permission denied", a lock held too long, or
// SQLite's own message. `path` is the database file; `db` may be null (out of memory).
std::string sqlite_failure_reason(sqlite3* db, int rc, std::string_view path);

// Throws StoreError: `<what> "<path>": <reason>`. Without `path`, the file `db` has open.
[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, std::string_view what,
                                     std::string_view path = {});

} // namespace ratelimit::store::sqlite
