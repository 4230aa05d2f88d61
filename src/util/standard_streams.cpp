#include "util/standard_streams.hpp"

#include "util/fd_io.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

namespace ratelimit::util {

namespace {

// The errno of the first failed write to standard output, or 0.
int g_stdout_errno = 0;

} // namespace

bool open_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
      continue;
    }
    // The lowest free descriptor is `fd`: those below it are open by now.
    int null = ::open("/dev/null", O_RDWR);
    if (null < 0) {
      return false;
    }
    if (null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
  return true;
}

void write_stderr(std::string_view text) {
  // A pipe whose reader has gone would end the process with SIGPIPE, and its status would
  // no longer tell the decision: the message is lost, nothing more. (Standard output keeps
  // SIGPIPE, as every filter does: `ratelimit status | head` ends quietly.)
  sigset_t sigpipe;
  sigset_t previous;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigpipe, &previous);
  if (write_all(STDERR_FILENO, text) == WriteResult::reader_gone) {
    // Taken while still blocked, so that it is never delivered.
    timespec now{};
    sigtimedwait(&sigpipe, nullptr, &now);
  }
  // Whatever else went wrong, there is nowhere left to say it.
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void write_stdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() && g_stdout_errno == 0) {
    g_stdout_errno = errno != 0 ? errno : EIO;
  }
}

void flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 && g_stdout_errno == 0) {
    g_stdout_errno = errno != 0 ? errno : EIO;
  }
}

int stdout_error() {
  flush_stdout();
  if (g_stdout_errno == 0 && std::ferror(stdout)) {
    // Written by another (CLI11's help, through std::cout): the reason is lost.
    g_stdout_errno = EIO;
  }
  return g_stdout_errno;
}

} // namespace ratelimit::util
