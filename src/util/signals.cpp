#include "util/signals.hpp"

#include "util/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace ratelimit::util {

InterruptSignals::InterruptSignals() {
  sigemptyset(&m_blocked);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal the parent chose to ignore (nohup, a background job's SIGINT) stays ignored:
    // a blocked signal would otherwise still be delivered to sigtimedwait.
    struct sigaction current{};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
      sigaddset(&m_blocked, signal);
    }
  }
  sigprocmask(SIG_BLOCK, &m_blocked, &m_previous);
}

InterruptSignals::~InterruptSignals() { restore(); }

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

} // namespace ratelimit::util
