#include "util/child_process.hpp"

#include "util/clock.hpp"
#include "util/errno_text.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ratelimit::util {

namespace {

// In the child, between fork and exec: only what is safe in a single-threaded child.
[[noreturn]] void execute_in_child(const std::vector<std::string>& command, pid_t parent,
                                   const sigset_t& mask) {
  // A supervisor killed with SIGKILL cannot pass anything on: the command goes with it, or
  // it would run on while its slot is counted free.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(128 + SIGKILL); // the parent died before the line above
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  std::vector<char*> argv;
  for (const std::string& word : command) {
    argv.push_back(const_cast<char*>(word.c_str()));
  }
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  int error = errno;
  // Escaped as keys are: a command name must not forge a line or reach the terminal raw.
  write_stderr(fmt::format("ratelimit: cannot run {}: {}\n", printable_key(command[0]),
                           error == ENOENT ? "command not found" : std::strerror(error)));
  ::_exit(error == ENOENT ? 127 : 126);
}

int exit_status(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return 128;
}

} // namespace

int run_child(const std::vector<std::string>& command, const std::function<void()>& tick,
              std::int64_t tick_ns) {
  // The child's mask is the caller's; the parent waits for its signals and the child's end
  // on one signalfd.
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  for (int signal : k_forwarded_signals) {
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
      sigaddset(&watched, signal);
    }
  }
  sigset_t previous;
  ::sigprocmask(SIG_BLOCK, &watched, &previous);
  struct Restore {
    const sigset_t& mask;
    int fd = -1;
    ~Restore() {
      if (fd >= 0) {
        ::close(fd);
      }
      ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    }
  } restore{previous};
  restore.fd = ::signalfd(-1, &watched, SFD_CLOEXEC);
  if (restore.fd < 0) {
    throw std::runtime_error(fmt::format("cannot wait for a command: {}", describe_errno(errno)));
  }
  pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child < 0) {
    throw std::runtime_error(fmt::format("cannot start a command: {}", describe_errno(errno)));
  }
  if (child == 0) {
    ::close(restore.fd);
    execute_in_child(command, parent, previous);
  }
  std::int64_t next_tick = tick && tick_ns > 0 ? monotonic_nanos() + tick_ns : -1;
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) {
      return exit_status(status);
    }
    int timeout_ms = -1;
    if (next_tick >= 0) {
      std::int64_t left = next_tick - monotonic_nanos();
      if (left <= 0) {
        tick();
        next_tick = monotonic_nanos() + tick_ns;
        continue;
      }
      timeout_ms = static_cast<int>((left + 999'999) / 1'000'000);
    }
    pollfd ready{restore.fd, POLLIN, 0};
    if (::poll(&ready, 1, timeout_ms) <= 0) {
      continue; // the tick's time, or EINTR
    }
    signalfd_siginfo info{};
    if (::read(restore.fd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) {
      continue;
    }
    if (static_cast<int>(info.ssi_signo) != SIGCHLD) {
      ::kill(child, static_cast<int>(info.ssi_signo));
    }
  }
}

} // namespace ratelimit::util
