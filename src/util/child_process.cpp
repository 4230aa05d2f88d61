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
#include <sched.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ratelimit::util {

namespace {

// What the child needs, in memory it shares with its parent until it executes the command.
struct ChildStart {
  char** argv = nullptr;
  pid_t parent = 0;
  const sigset_t* mask = nullptr;
  // Set by the child when the command cannot be executed.
  int exec_errno = 0;
};

// In the child, which shares the parent's memory and runs while the parent is suspended
// (CLONE_VM | CLONE_VFORK, as posix_spawn does): only system calls, no allocation.
int start_command(void* data) {
  auto* start = static_cast<ChildStart*>(data);
  // A supervisor killed with SIGKILL cannot pass anything on: the command goes with it, or
  // it would run on while its slot is counted free.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != start->parent) {
    ::_exit(128 + SIGKILL); // the parent died before the line above
  }
  ::sigprocmask(SIG_SETMASK, start->mask, nullptr);
  ::execvp(start->argv[0], start->argv);
  start->exec_errno = errno;
  ::_exit(errno == ENOENT ? 127 : 126);
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
  std::vector<char*> argv;
  for (const std::string& word : command) {
    argv.push_back(const_cast<char*>(word.c_str()));
  }
  argv.push_back(nullptr);
  ChildStart start{argv.data(), ::getpid(), &previous, 0};
  // Not fork: copying the page tables, and the copy-on-write faults that follow in the
  // parent, cost more than the rest of a run's supervision. The child runs on a stack of its
  // own until it executes the command; the parent waits for that (CLONE_VFORK).
  constexpr std::size_t k_stack_size = 64 * 1024;
  void* stack = ::mmap(nullptr, k_stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    throw std::runtime_error(fmt::format("cannot start a command: {}", describe_errno(errno)));
  }
  pid_t child = ::clone(start_command, static_cast<char*>(stack) + k_stack_size,
                        CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  int clone_errno = errno;
  ::munmap(stack, k_stack_size);
  if (child < 0) {
    throw std::runtime_error(
        fmt::format("cannot start a command: {}", describe_errno(clone_errno)));
  }
  if (start.exec_errno != 0) {
    // Escaped as keys are: a command name must not forge a line or reach the terminal raw.
    write_stderr(fmt::format("ratelimit: cannot run {}: {}\n", printable_key(command[0]),
                             start.exec_errno == ENOENT ? "command not found"
                                                        : std::strerror(start.exec_errno)));
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
