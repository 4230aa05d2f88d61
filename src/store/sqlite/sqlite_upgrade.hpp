#pragma once

#include <sqlite3.h>

namespace ratelimit::store::sqlite {

// Upgrades a database of schema version 1 to the current one, inside the caller's write
// transaction; throws StoreError. Version 1 kept one sliding log per limit of a key (by
// period); version 2 keeps one log per key, and the longest period its calls named.
void upgrade_from_version_1(sqlite3* db);

// The table of a key's counters (version 3): requests granted and limited, and the time
// callers waited for their slots, by key name, so that they outlive the key's state. Part of
// a new database's schema, and what `upgrade_from_version_2` adds.
extern const char* const k_counters_schema;

// Upgrades a database of schema version 2 to version 3, inside the caller's write
// transaction: version 3 adds the end of each key's pause (`ratelimit pause`), none for the
// keys there, and the counters table, empty. Throws StoreError.
void upgrade_from_version_2(sqlite3* db);

// Upgrades a database of schema version 5 to version 6, inside the caller's write
// transaction: version 6 keeps the counters of a key that has a row in that row (granted,
// limited, waited_us, touched_at), so that a decision writes one row; the counters table
// keeps those of the names that have none. Throws StoreError.
void upgrade_from_version_5(sqlite3* db);

// Upgrades a database of schema version 6 to version 7, inside the caller's write
// transaction: version 7 keeps what the servers said of a key (its grant sequence, server
// budget, awaited answers and learned policies) in the `server` column of its row, NULL for
// a key that never heard from one, and counts the answers 429 and 503 observed per key
// (`throttled`, in the row and in the counters table). Throws StoreError.
void upgrade_from_version_6(sqlite3* db);

} // namespace ratelimit::store::sqlite
