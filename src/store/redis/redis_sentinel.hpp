#pragma once

#include "core/time.hpp"
#include "store/store_url.hpp"

namespace ratelimit::store::redis {

// Asks the sentinels of `location` (redis-sentinel://), in order, for the address of its
// master (SENTINEL get-master-addr-by-name): the first that knows it answers. Each sentinel
// is asked over plain TCP without a password, connecting and answering within `timeout`.
// Returns `location` with that host and port and no sentinels: the user, password and
// database stay, for the master. Throws StoreError, in one line naming the master and each
// sentinel asked with why it did not answer: StoreUnavailable when none could be reached.
RedisLocation locate_master(const RedisLocation& location, core::Nanos timeout);

} // namespace ratelimit::store::redis
