/* Runs a command many times, one process each, and prints the wall time of every run.
 *
 *   bench_exec -n COUNT -- COMMAND [ARG...]
 *       runs COMMAND COUNT times in sequence; prints one line per run:
 *       "<nanoseconds> <exit status> <CPU nanoseconds, user and system>"
 *   bench_exec -p PROCS -s SECONDS -- COMMAND [ARG...]
 *       PROCS loops run COMMAND back to back for SECONDS; prints one line per run. In an
 *       argument, "%i" stands for the loop's number (0 to PROCS - 1): a key of each loop's own.
 *
 * Exit statuses other than 0 and 1 are counted as errors by the caller. Output goes to
 * stdout after all runs, so that printing does not disturb the timing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs `argv` once; its CPU time (user and system) in `cpu_ns`. */
static int run_once(char **argv, int devnull, int64_t *cpu_ns) {
  pid_t pid = fork();
  if (pid == 0) {
    dup2(devnull, 1);
    dup2(devnull, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  memset(&usage, 0, sizeof usage);
  wait4(pid, &status, 0, &usage);
  *cpu_ns = ((int64_t)usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000 +
            ((int64_t)usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct sample {
  int64_t ns;
  int status;
  int64_t cpu_ns;
};

/* One loop: runs until `deadline` (or `count` runs), writing samples to `out`. */
static size_t loop(char **argv, long count, int64_t deadline, struct sample *out, size_t cap) {
  int devnull = open("/dev/null", O_WRONLY);
  size_t n = 0;
  while (n < cap && (count > 0 ? (long)n < count : now_ns() < deadline)) {
    int64_t start = now_ns();
    int status = run_once(argv, devnull, &out[n].cpu_ns);
    out[n].ns = now_ns() - start;
    out[n].status = status;
    ++n;
  }
  close(devnull);
  return n;
}

/* `argv` with "%i" in each argument replaced by `number`. */
static char **numbered(char **argv, long number) {
  size_t count = 0;
  while (argv[count]) {
    ++count;
  }
  char **out = calloc(count + 1, sizeof *out);
  for (size_t i = 0; i < count; ++i) {
    const char *mark = strstr(argv[i], "%i");
    if (!mark) {
      out[i] = argv[i];
      continue;
    }
    size_t size = strlen(argv[i]) + 24;
    out[i] = malloc(size);
    snprintf(out[i], size, "%.*s%ld%s", (int)(mark - argv[i]), argv[i], number, mark + 2);
  }
  return out;
}

int main(int argc, char **argv) {
  long count = 0, procs = 1;
  double seconds = 0;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      count = atol(argv[++i]);
    } else if (!strcmp(argv[i], "-p") && i + 1 < argc) {
      procs = atol(argv[++i]);
    } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
      seconds = atof(argv[++i]);
    }
  }
  if (i + 1 >= argc || (count <= 0 && seconds <= 0)) {
    fprintf(stderr, "usage: bench_exec (-n COUNT | -p PROCS -s SECONDS) -- COMMAND [ARG...]\n");
    return 2;
  }
  char **command = argv + i + 1;
  size_t cap = count > 0 ? (size_t)count : 200000;
  int64_t deadline = now_ns() + (int64_t)(seconds * 1e9);
  if (procs <= 1) {
    struct sample *samples = calloc(cap, sizeof *samples);
    size_t n = loop(command, count, deadline, samples, cap);
    for (size_t k = 0; k < n; ++k) {
      printf("%lld %d %lld\n", (long long)samples[k].ns, samples[k].status,
             (long long)samples[k].cpu_ns);
    }
    return 0;
  }
  /* Several loops: each child writes its samples to a pipe when done. */
  int fds[64][2];
  for (long p = 0; p < procs && p < 64; ++p) {
    if (pipe(fds[p]) != 0) {
      return 1;
    }
    if (fork() == 0) {
      close(fds[p][0]);
      struct sample *samples = calloc(cap, sizeof *samples);
      size_t n = loop(numbered(command, p), 0, deadline, samples, cap);
      FILE *out = fdopen(fds[p][1], "w");
      for (size_t k = 0; k < n; ++k) {
        fprintf(out, "%lld %d %lld\n", (long long)samples[k].ns, samples[k].status,
                (long long)samples[k].cpu_ns);
      }
      fclose(out);
      _exit(0);
    }
    close(fds[p][1]);
  }
  char buffer[65536];
  for (long p = 0; p < procs && p < 64; ++p) {
    ssize_t got;
    while ((got = read(fds[p][0], buffer, sizeof buffer)) > 0) {
      fwrite(buffer, 1, (size_t)got, stdout);
    }
    close(fds[p][0]);
  }
  while (wait(NULL) > 0) {
  }
  return 0;
}
