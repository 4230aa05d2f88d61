#include "util/file_lock.hpp"

#include <cerrno>
#include <csignal>
#include <sys/file.h>
#include <sys/time.h>

namespace ratelimit::util {

namespace {

void interrupt_only(int) {}

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
  // As flock(1) does: block in the kernel and let a timer signal interrupt the wait.
  struct sigaction action{};
  struct sigaction previous{};
  action.sa_handler = interrupt_only;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0; // no SA_RESTART: the signal must end flock()
  sigaction(SIGALRM, &action, &previous);
  itimerval timer{};
  timer.it_value.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
  timer.it_value.tv_usec = static_cast<suseconds_t>((timeout_ns % 1'000'000'000) / 1000);
  if (timer.it_value.tv_sec == 0 && timer.it_value.tv_usec == 0) {
    timer.it_value.tv_usec = 1;
  }
  setitimer(ITIMER_REAL, &timer, nullptr);
  int rc = flock(fd, LOCK_EX);
  int saved_errno = errno;
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &previous, nullptr);
  if (rc == 0) {
    return LockResult::locked;
  }
  errno = saved_errno;
  return saved_errno == EINTR ? LockResult::timed_out : LockResult::failed;
}

void unlock(int fd) { flock(fd, LOCK_UN); }

} // namespace ratelimit::util
