#pragma once

#include <cstdint>

namespace ratelimit::util {

enum class LockResult { locked, timed_out, failed };

// Takes an exclusive flock(2) on `fd`, waiting at most `timeout_ns` (blocked in the
// kernel, not polling). `failed` leaves errno set.
LockResult lock_exclusive(int fd, std::int64_t timeout_ns);

void unlock(int fd);

} // namespace ratelimit::util
