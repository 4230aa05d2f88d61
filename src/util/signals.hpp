#pragma once

#include <csignal>
#include <cstdint>
#include <functional>

namespace ratelimit::util {

// Holds SIGINT, SIGTERM and SIGHUP (those not ignored) blocked for its lifetime, so that one
// arriving between a reservation and the sleep that follows is kept pending rather than lost, and
// the sleep can wait for the clock or a signal in one system call.
class InterruptSignals {
public:
  InterruptSignals();
  ~InterruptSignals();
  InterruptSignals(const InterruptSignals&) = delete;
  InterruptSignals& operator=(const InterruptSignals&) = delete;

  // Sleeps `duration_ns` (monotonic) unless one of the signals arrives first; returns that
  // signal, or 0 after the full sleep. `tick`, when given, is called with the time left
  // every `tick_ns` and once at the end with 0.
  int sleep_for(std::int64_t duration_ns, const std::function<void(std::int64_t)>& tick = {},
                std::int64_t tick_ns = 0);

  // A signal already pending, taken, or 0.
  int take_pending();

  // Puts back the signal mask from before, e.g. for a command about to be executed.
  void restore();

  // Blocks the signals again after `restore`, for a caller that holds them only around each
  // reservation and its sleep, and lets them end the process as usual in between.
  void block();

  // Sleeps like `sleep_for`, but also ends early, with `fd_gone` set and 0 returned, when
  // `fd` reports an error or a hang-up to poll(2): the reader of an output pipe has gone.
  // A signal that arrives as the sleep ends is left pending.
  int sleep_watching(std::int64_t duration_ns, int fd, bool& fd_gone);

  // Sleeps like `sleep_for`, but also ends early, with `readable` set and 0 returned, when
  // `fd` has something to read. `duration_ns` INT64_MAX sleeps without a time limit.
  int sleep_or_readable(std::int64_t duration_ns, int fd, bool& readable);

private:
  // Waits on poll(2) for the signals, `fd` with `events`, and the clock; returns the signal,
  // or 0 with `revents` set to what `fd` reported.
  int poll_with_signals(std::int64_t duration_ns, int fd, short events, short& revents);

  sigset_t m_blocked{};
  sigset_t m_previous{};
  bool m_restored = false;
  // A signalfd(2) for the blocked signals, made on first use by `sleep_watching`.
  int m_signal_fd = -1;
};

} // namespace ratelimit::util
