#include "util/standard_streams.hpp"

#include "util/fd_io.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
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
  // Whatever went wrong, there is nowhere left to say it.
  static_cast<void>(write_all(STDERR_FILENO, text));
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
