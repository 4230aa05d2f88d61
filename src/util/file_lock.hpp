#pragma once

#include <cstdint>

namespace ratelimit::util {

enum class LockResult { locked, timed_out, failed };

// Takes an exclusive flock(2) on `fd`, waiting at most `timeout_ns` (blocked in the
// kernel, not polling; `timeout_ns` 0 tries once). The wait uses SIGALRM and an interval
// timer, whatever the caller's signal mask, and lets SIGINT, SIGTERM and SIGHUP through with
// the dispositions they have. `failed` leaves errno set.
LockResult lock_exclusive(int fd, std::int64_t timeout_ns);

void unlock(int fd);

} // namespace ratelimit::util
