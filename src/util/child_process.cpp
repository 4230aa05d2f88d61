#include "util/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

namespace ratelimit::util {

ChildExit run_child(const std::vector<std::string>& command) {
  sigset_t waited;
  sigemptyset(&waited);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction action {};
    if (sigaction(signal, nullptr, &action) == 0 && action.sa_handler != SIG_IGN) {
      sigaddset(&waited, signal);
    }
  }
  // An ignored SIGCHLD would reap the child before it could be waited for.
  struct sigaction child_action {};
  if (sigaction(SIGCHLD, nullptr, &child_action) == 0 && child_action.sa_handler == SIG_IGN) {
    child_action.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &child_action, nullptr);
  }
  sigaddset(&waited, SIGCHLD);
  // Blocked before the child starts, so that none of them is lost: a blocked signal stays
  // pending until sigwaitinfo takes it.
  sigset_t before;
  sigprocmask(SIG_BLOCK, &waited, &before);

  std::vector<char*> argv;
  for (const std::string& word : command) {
    argv.push_back(const_cast<char*>(word.c_str()));
  }
  argv.push_back(nullptr);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setsigmask(&attributes, &before);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  ChildExit result;
  result.spawn_error = posix_spawnp(&pid, argv[0], nullptr, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  if (result.spawn_error != 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    return result;
  }

  int wait_status = 0;
  for (;;) {
    siginfo_t info{};
    int signal = sigwaitinfo(&waited, &info);
    if (signal < 0) {
      continue; // EINTR: a signal outside the set, handled
    }
    if (signal == SIGCHLD) {
      pid_t done = ::waitpid(pid, &wait_status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) {
        break;
      }
      continue;
    }
    // The kernel sends the terminal's signals (^C, ^\, a hang-up) to the whole foreground
    // process group, the child included; a signal sent by a process is for this one alone.
    if (info.si_code != SI_KERNEL) {
      ::kill(pid, signal);
    }
  }
  sigprocmask(SIG_SETMASK, &before, nullptr);
  if (WIFSIGNALED(wait_status)) {
    result.status = 128 + WTERMSIG(wait_status);
  } else {
    result.status = WEXITSTATUS(wait_status);
    result.exited = true;
  }
  return result;
}

} // namespace ratelimit::util
