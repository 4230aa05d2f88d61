#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ratelimit::util {

// The signals a supervising parent passes on to its child: what a terminal or a process
// manager sends to end a job. Those this process ignores are left ignored, and not passed.
inline constexpr int k_forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Runs `command` (searched in PATH, no shell) as a child process and waits for it, staying
// its parent: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process are passed on to the
// child, and the child is killed (SIGKILL) if this process dies first, so that no command
// outlives the process that accounts for it. `tick`, when given, is called every `tick_ns`
// while the child runs (a lease to renew).
//
// Returns the child's exit status, or 128 + N when signal N ended it. A command that cannot
// be executed is reported by the child on stderr (`ratelimit: cannot run ...`), which exits
// 127 when it is not found and 126 otherwise, as a shell does. Throws std::runtime_error when
// no child can be made (fork fails). The caller's signal mask is the child's.
int run_child(const std::vector<std::string>& command, const std::function<void()>& tick = {},
              std::int64_t tick_ns = 0);

} // namespace ratelimit::util
