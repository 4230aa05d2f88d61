#include "util/file_lock.hpp"

#include "util/clock.hpp"

#include <cerrno>
#include <csignal>
#include <initializer_list>
#include <sys/file.h>
#include <sys/time.h>

namespace ratelimit::util {

namespace {

void interrupt_only(int) {}

// After the first expiry the timer keeps firing at this interval, so that an expiry that
// lands just before flock() is entered cannot leave it blocked for good.
constexpr std::int64_t k_retry_interval_ns = 10'000'000;

timeval to_timeval(std::int64_t ns) {
  timeval tv{static_cast<time_t>(ns / 1'000'000'000),
             static_cast<suseconds_t>((ns % 1'000'000'000) / 1000)};
  if (tv.tv_sec == 0 && tv.tv_usec == 0) {
    tv.tv_usec = 1;
  }
  return tv;
}

} // namespace

LockResult lock_exclusive(int fd, std::int64_t timeout_ns) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    return LockResult::locked;
  }
  if (errno != EWOULDBLOCK) {
    return LockResult::failed;
  }
  if (timeout_ns <= 0) {
    return LockResult::timed_out;
  }
  std::int64_t deadline = monotonic_nanos() + timeout_ns;
  // As flock(1) does: block in the kernel and let a timer signal interrupt the wait.
  struct sigaction action{};
  struct sigaction previous{};
  action.sa_handler = interrupt_only;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0; // no SA_RESTART: the signal must end flock()
  sigaction(SIGALRM, &action, &previous);
  // The timer must get through even when the caller (or our parent, through exec) blocked
  // SIGALRM. The terminating signals are let through too: nothing is held or decided yet,
  // so dying of one here is what the user asked for, and a lock held by a stopped process
  // must not make Ctrl-C wait for the timeout.
  sigset_t wake{};
  sigset_t saved_mask{};
  sigemptyset(&wake);
  for (int signal : {SIGALRM, SIGINT, SIGTERM, SIGHUP}) {
    sigaddset(&wake, signal);
  }
  sigprocmask(SIG_UNBLOCK, &wake, &saved_mask);
  itimerval timer{};
  timer.it_value = to_timeval(timeout_ns);
  timer.it_interval = to_timeval(k_retry_interval_ns);
  setitimer(ITIMER_REAL, &timer, nullptr);
  LockResult result = LockResult::failed;
  int saved_errno = 0;
  for (;;) {
    if (flock(fd, LOCK_EX) == 0) {
      result = LockResult::locked;
      break;
    }
    saved_errno = errno;
    if (saved_errno != EINTR) {
      break;
    }
    if (monotonic_nanos() >= deadline) {
      result = LockResult::timed_out;
      break;
    }
    // Another handled signal, or the timer came early: wait on.
  }
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
  sigaction(SIGALRM, &previous, nullptr);
  errno = saved_errno;
  return result;
}

void unlock(int fd) {
  flock(fd, LOCK_UN);
}

} // namespace ratelimit::util
