#include "util/signals.hpp"

#include "util/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace ratelimit::util {

InterruptSignals::InterruptSignals() {
  sigemptyset(&m_blocked);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal the parent chose to ignore (nohup, a background job's SIGINT) stays ignored:
    // a blocked signal would otherwise still be delivered to sigtimedwait.
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
      sigaddset(&m_blocked, signal);
    }
  }
  sigprocmask(SIG_BLOCK, &m_blocked, &m_previous);
}

InterruptSignals::~InterruptSignals() {
  restore();
  if (m_signal_fd >= 0) {
    ::close(m_signal_fd);
  }
}

void InterruptSignals::restore() {
  if (!m_restored) {
    sigprocmask(SIG_SETMASK, &m_previous, nullptr);
    m_restored = true;
  }
}

int InterruptSignals::take_pending() {
  timespec zero{};
  int signal = sigtimedwait(&m_blocked, nullptr, &zero);
  return signal > 0 ? signal : 0;
}

int InterruptSignals::sleep_for(std::int64_t duration_ns,
                                const std::function<void(std::int64_t)>& tick,
                                std::int64_t tick_ns) {
  std::int64_t deadline = monotonic_nanos() + duration_ns;
  for (;;) {
    std::int64_t left = deadline - monotonic_nanos();
    if (left <= 0) {
      if (int signal = take_pending()) {
        return signal;
      }
      if (tick) {
        tick(0);
      }
      return 0;
    }
    std::int64_t step = left;
    if (tick && tick_ns > 0) {
      tick(left);
      step = std::min(left, tick_ns);
    }
    timespec timeout{static_cast<time_t>(step / 1'000'000'000),
                     static_cast<long>(step % 1'000'000'000)};
    int signal = sigtimedwait(&m_blocked, nullptr, &timeout);
    if (signal > 0) {
      return signal;
    }
    // EAGAIN: the step elapsed; EINTR: another signal (a stop, a window change): go on.
  }
}

void InterruptSignals::block() {
  if (m_restored) {
    sigprocmask(SIG_BLOCK, &m_blocked, &m_previous);
    m_restored = false;
  }
}

int InterruptSignals::sleep_watching(std::int64_t duration_ns, int fd, bool& fd_gone) {
  fd_gone = false;
  if (m_signal_fd < 0) {
    // Blocked signals are readable from a signalfd: one poll(2) waits for the clock, a
    // signal and the descriptor at once.
    m_signal_fd = ::signalfd(-1, &m_blocked, SFD_CLOEXEC | SFD_NONBLOCK);
    if (m_signal_fd < 0) {
      return sleep_for(duration_ns);
    }
  }
  std::int64_t deadline = monotonic_nanos() + duration_ns;
  pollfd fds[2] = {{m_signal_fd, POLLIN, 0}, {fd, 0, 0}};
  for (;;) {
    std::int64_t left = std::max<std::int64_t>(0, deadline - monotonic_nanos());
    timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                     static_cast<long>(left % 1'000'000'000)};
    int ready = ::ppoll(fds, 2, &timeout, nullptr);
    if (ready < 0 && errno != EINTR) {
      return sleep_for(std::max<std::int64_t>(0, deadline - monotonic_nanos()));
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(m_signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        return static_cast<int>(info.ssi_signo);
      }
    }
    if (fds[1].revents & (POLLERR | POLLHUP)) {
      fd_gone = true;
      return 0;
    }
    if (fds[1].revents & POLLNVAL) {
      fds[1].fd = -1;
    }
    if (deadline - monotonic_nanos() <= 0) {
      // A signal that comes with the deadline is left pending for the caller's mask.
      return 0;
    }
  }
}

int InterruptSignals::poll_with_signals(std::int64_t duration_ns, int fd, short events,
                                        short& revents) {
  revents = 0;
  if (m_signal_fd < 0) {
    m_signal_fd = ::signalfd(-1, &m_blocked, SFD_CLOEXEC | SFD_NONBLOCK);
    if (m_signal_fd < 0) {
      return sleep_for(duration_ns == INT64_MAX ? 1'000'000'000 : duration_ns);
    }
  }
  bool forever = duration_ns == INT64_MAX;
  std::int64_t deadline = forever ? 0 : monotonic_nanos() + duration_ns;
  pollfd fds[2] = {{m_signal_fd, POLLIN, 0}, {fd, events, 0}};
  for (;;) {
    std::int64_t left = forever ? 0 : std::max<std::int64_t>(0, deadline - monotonic_nanos());
    timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                     static_cast<long>(left % 1'000'000'000)};
    int ready = ::ppoll(fds, 2, forever ? nullptr : &timeout, nullptr);
    if (ready < 0 && errno != EINTR) {
      return sleep_for(forever ? 1'000'000'000
                               : std::max<std::int64_t>(0, deadline - monotonic_nanos()));
    }
    if (ready > 0 && (fds[0].revents & POLLIN)) {
      signalfd_siginfo info{};
      if (::read(m_signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        return static_cast<int>(info.ssi_signo);
      }
    }
    if (ready > 0 && fds[1].revents != 0) {
      revents = fds[1].revents;
      return 0;
    }
    if (!forever && deadline - monotonic_nanos() <= 0) {
      return 0;
    }
  }
}

int InterruptSignals::sleep_or_readable(std::int64_t duration_ns, int fd, bool& readable) {
  short revents = 0;
  int signal = poll_with_signals(duration_ns, fd, POLLIN, revents);
  readable = (revents & POLLIN) != 0;
  return signal;
}

} // namespace ratelimit::util
