#!/usr/bin/env bash
# pipe throughput against cat, and the rate and CPU it achieves when it paces records.
# Not a test: CI does not run it.
#   tests/bench/pipe_bench.sh [path/to/ratelimit]          (default: build/ratelimit)
# Environment: LINES_TOTAL (default 3000000), RUNS (best of, default 5), PACED_SECONDS
# (default 10), PACED_RATE (default 10000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
lines_total=${LINES_TOTAL:-3000000}
runs=${RUNS:-5}
paced_seconds=${PACED_SECONDS:-10}
paced_rate=${PACED_RATE:-10000}
work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-pipe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export RATELIMIT_DB="$work/ratelimit.db"

seq "$lines_total" >"$work/lines"
tr '\n' '\0' <"$work/lines" >"$work/records"
bytes=$(wc -c <"$work/lines")

# The best of $runs wall-clock times of `$@ < $input | cat > /dev/null`, in milliseconds:
# the output goes through a pipe, as it would to xargs.
input="$work/lines"
best_ms() {
  local best= run started elapsed
  for ((run = 0; run < runs; run++)); do
    started=$(date +%s%N)
    "$@" <"$input" | cat >/dev/null
    elapsed=$((($(date +%s%N) - started) / 1000000))
    if [ -z "$best" ] || [ "$elapsed" -lt "$best" ]; then
      best=$elapsed
    fi
  done
  echo "$best"
}

throughput_row() {
  local name=$1 ms=$2 reference=$3
  awk -v name="$name" -v ms="$ms" -v lines="$lines_total" -v bytes="$bytes" -v ref="$reference" \
    'BEGIN { printf "  %-40s %7d ms %8.2f M lines/s %7.1f MB/s   %.2f of cat\n",
             name, ms, lines / ms / 1000, bytes / ms / 1000, ref / ms }'
}

echo "pipe throughput: $lines_total lines ($bytes bytes), best of $runs, output through a pipe"
cat_ms=$(best_ms cat)
throughput_row "cat" "$cat_ms" "$cat_ms"
throughput_row "ratelimit pipe -r 1000000000/s" \
  "$(best_ms "$ratelimit" pipe -r 1000000000/s)" "$cat_ms"
input="$work/records"
throughput_row "ratelimit pipe -0 -r 1000000000/s (NULs)" \
  "$(best_ms "$ratelimit" pipe -0 -r 1000000000/s)" "$cat_ms"
input="$work/lines"
throughput_row "ratelimit pipe -r 1000000000/s -a sliding-log" \
  "$(best_ms "$ratelimit" pipe -r 1000000000/s -a sliding-log)" "$cat_ms"
"$ratelimit" reset --all
throughput_row "ratelimit pipe KEY -r 1000000000/s" \
  "$(best_ms "$ratelimit" pipe bench-key -r 1000000000/s)" "$cat_ms"

# Runs `ratelimit pipe ARGS` on an endless input for $paced_seconds, then stops it with
# SIGTERM; prints the records per second it let through after the first, and its CPU use.
paced_row() {
  local name=$1
  shift
  local out="$work/paced.out" times="$work/paced.times"
  local started ended status
  started=$(date +%s%N)
  # `time` reports the CPU of the pipe alone: yes and wc run outside it.
  {
    TIMEFORMAT='%U %S'
    time timeout -s TERM "$paced_seconds" "$ratelimit" pipe "$@" < <(yes record) >"$out" || true
  } 2>"$times"
  ended=$(date +%s%N)
  awk -v name="$name" -v lines="$(wc -l <"$out")" -v ns=$((ended - started)) \
    -v cpu="$(tail -n 1 "$times")" \
    'BEGIN { split(cpu, t, " "); s = ns / 1e9;
             printf "  %-40s %9d records in %5.2f s: %8.1f/s   CPU %5.1f%% (user %.2f s, sys %.2f s)\n",
             name, lines, s, (lines - 1) / s, 100 * (t[1] + t[2]) / s, t[1], t[2] }'
}

echo
echo "pipe pacing: $paced_rate records/s for $paced_seconds s, from an endless producer"
echo "  (a burst of 1 allows no catching up: each wake-up's lateness is lost rate, and each"
echo "   record has a wake-up of its own; a larger burst lets late wake-ups catch up, and"
echo "   the records due within a millisecond share one wake-up)"
paced_row "ratelimit pipe -r $paced_rate/s -b 1" -r "$paced_rate/s" -b 1
paced_row "ratelimit pipe -r $paced_rate/s -b 100" -r "$paced_rate/s" -b 100
paced_row "ratelimit pipe -r $paced_rate/s -a leaky-bucket" -r "$paced_rate/s" -a leaky-bucket
"$ratelimit" reset --all
paced_row "ratelimit pipe KEY -r $paced_rate/s -b 1" bench-paced -r "$paced_rate/s" -b 1
"$ratelimit" reset --all
paced_row "ratelimit pipe KEY -r $paced_rate/s -b 100" bench-paced -r "$paced_rate/s" -b 100
