/* An LD_PRELOAD shim that measures the critical section of a process: from the moment an
 * exclusive flock(2) is granted to the moment it is released. Built and loaded only by the
 * benchmark (tests/bench/lock_hold_bench.sh): nothing of it is in ratelimit.
 *
 *   LD_PRELOAD=lock_hold.so LOCK_HOLD_LOG=FILE ratelimit ...
 *       appends to FILE, for every hold, "<wall ns> <minor page faults> <CPU ns>".
 *   valgrind --tool=callgrind --collect-atstart=no LD_PRELOAD=lock_hold.so ...
 *       counts the instructions of the holds only: collection is switched on when the lock is
 *       granted and off when it is released (a client request, which does nothing outside
 *       valgrind; without valgrind's headers the shim only logs).
 *
 * Both ratelimit and tests/bench/baseline.c take the lock with flock() from libc, which the
 * shim replaces; SQLite's own locks are fcntl() locks, which it leaves alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

static int (*real_flock)(int, int);
static int holding;
static int64_t held_at, cpu_at;
static long faults_at;

static int64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long minor_faults(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

static void record(int64_t wall, long faults, int64_t cpu) {
  const char *path = getenv("LOCK_HOLD_LOG");
  if (!path) {
    return;
  }
  char line[96];
  int length = snprintf(line, sizeof line, "%lld %ld %lld\n", (long long)wall, faults,
                        (long long)cpu);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!write(fd, line, (size_t)length);
    close(fd);
  }
}

int flock(int fd, int operation) {
  if (!real_flock) {
    real_flock = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
  }
  if ((operation & LOCK_UN) && holding) {
    int64_t wall = clock_ns(CLOCK_MONOTONIC) - held_at;
    int64_t cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_at;
    long faults = minor_faults() - faults_at;
    CALLGRIND_TOGGLE_COLLECT;
    holding = 0;
    int result = real_flock(fd, operation);
    record(wall, faults, cpu);
    return result;
  }
  int result = real_flock(fd, operation);
  if (result == 0 && (operation & LOCK_EX) && !holding) {
    holding = 1;
    CALLGRIND_TOGGLE_COLLECT;
    faults_at = minor_faults();
    cpu_at = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    held_at = clock_ns(CLOCK_MONOTONIC);
  }
  return result;
}
