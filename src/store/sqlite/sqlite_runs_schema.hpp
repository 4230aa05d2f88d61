#pragma once

#include <sqlite3.h>

namespace ratelimit::store::sqlite {

// The table of the run slots (`run -j`, `run --until-exit`), added by schema version 3: one
// row per command that waits for, holds, or held a slot of a key. `id` is the arrival order;
// `token` names the command's liveness file in the directory beside the database (see
// util::LivenessFile); `started` is null while it waits, `ended` while it runs; an ended
// row is kept for `hold` (its longest cap's hold) after `ended`.
inline constexpr const char* k_runs_schema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL,
  cost INTEGER NOT NULL,
  hold INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  token TEXT NOT NULL,
  joined INTEGER NOT NULL,
  started INTEGER,
  ended INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_key ON runs (key, id);
)sql";

// Upgrades a database of schema version 2 to 3 (the run slots' table), inside the caller's
// write transaction; throws StoreError.
void upgrade_from_version_2_runs(sqlite3* db);

} // namespace ratelimit::store::sqlite
