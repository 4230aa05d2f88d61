#pragma once

#include <sqlite3.h>

namespace ratelimit::store {

// Upgrades a database of schema version 1 to the current one, inside the caller's write
// transaction; throws StoreError. Version 1 kept one sliding log per limit of a key (by
// period); version 2 keeps one log per key, and the longest period its calls named.
void upgrade_from_version_1(sqlite3* db);

// Upgrades a database of schema version 2 to version 3, as `upgrade_from_version_1`:
// version 3 adds the end of each key's pause (`ratelimit pause`), none for the keys there.
void upgrade_from_version_2(sqlite3* db);

} // namespace ratelimit::store
