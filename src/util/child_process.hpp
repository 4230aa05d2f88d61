#pragma once

#include <string>
#include <vector>

namespace ratelimit::util {

// What became of a command run as a child.
struct ChildExit {
  // Its exit status, or 128 + N when signal N killed it.
  int status = 0;
  // Whether it exited by itself (`status` is then its own exit status).
  bool exited = false;
  // The errno for a command that could not be started (then nothing else is set).
  int spawn_error = 0;
};

// Runs `command` (searched in PATH) as a child and waits for it, as timeout(1) does:
// SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process (those it does not ignore) are
// passed on to the child, which starts with the signal mask the caller had. Signals that
// the terminal sent to its whole foreground process group reached the child already and
// are not sent again. Call it with none of those signals blocked.
ChildExit run_child(const std::vector<std::string>& command);

} // namespace ratelimit::util
