#pragma once

namespace ratelimit::cli {

// The documented exit statuses (man page, EXIT STATUS).
inline constexpr int k_exit_granted = 0;
inline constexpr int k_exit_limited = 1; // changed by -E/--limited-exit-code
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_store = 3;
// Standard output could not be written: a full disk, an I/O error.
inline constexpr int k_exit_output = 4;
// Under run, ratelimit's own failures instead of 2, 3 and 4, as env, nice and timeout do.
inline constexpr int k_exit_wrapper_failure = 125;
inline constexpr int k_exit_cannot_execute = 126;
inline constexpr int k_exit_not_found = 127;

} // namespace ratelimit::cli
