#include "util/fd_io.hpp"

#include "util/clock.hpp"

#include <cerrno>
#include <ctime>
#include <poll.h>
#include <unistd.h>

namespace ratelimit::util {

namespace {

// Error and hang-up are reported whatever the requested events: asking for none watches
// only for them. A regular file or /dev/null reports neither.
bool gone(short revents) {
  return (revents & (POLLERR | POLLHUP)) != 0;
}

} // namespace

WriteResult write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(written));
      continue;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd writable{fd, POLLOUT, 0};
      ::poll(&writable, 1, -1);
      continue;
    }
    return errno == EPIPE ? WriteResult::reader_gone : WriteResult::failed;
  }
  return WriteResult::written;
}

InputWait wait_for_input(int input, int output) {
  pollfd fds[2] = {{input, POLLIN, 0}, {output, 0, 0}};
  for (;;) {
    int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      return InputWait::readable; // let read(2) report what is wrong
    }
    if (gone(fds[1].revents)) {
      return InputWait::reader_gone;
    }
    if (fds[0].revents != 0) {
      return InputWait::readable;
    }
    if (fds[1].revents & POLLNVAL) {
      fds[1].fd = -1; // a closed output: the write will say so
    }
  }
}

bool sleep_unless_reader_gone(int output, std::int64_t duration_ns) {
  std::int64_t deadline = monotonic_nanos() + duration_ns;
  pollfd fd{output, 0, 0};
  for (;;) {
    std::int64_t left = deadline - monotonic_nanos();
    if (left <= 0) {
      return true;
    }
    timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                     static_cast<long>(left % 1'000'000'000)};
    if (::ppoll(&fd, 1, &timeout, nullptr) > 0) {
      if (gone(fd.revents)) {
        return false;
      }
      fd.fd = -1; // POLLNVAL: no output to watch; sleep on
    }
  }
}

bool reader_gone(int output) {
  pollfd fd{output, 0, 0};
  return ::poll(&fd, 1, 0) > 0 && gone(fd.revents);
}

} // namespace ratelimit::util
