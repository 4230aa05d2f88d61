#include "store/sqlite/sqlite_runs_schema.hpp"

#include "store/sqlite/sqlite_error.hpp"

namespace ratelimit::store::sqlite {

void upgrade_from_version_2_runs(sqlite3* db) {
  for (const char* sql : {k_runs_schema, "PRAGMA user_version = 3;"}) {
    if (int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) {
      throw_sqlite_error(db, rc, "cannot upgrade the database", sqlite3_db_filename(db, "main"));
    }
  }
}

} // namespace ratelimit::store::sqlite
