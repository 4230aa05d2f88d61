#!/usr/bin/env bash
# Times `ratelimit simulate` on 1 000 000 arrivals x 5 algorithms; the goal is under 2 s.
# Not a test: it prints figures. Usage: tests/bench/simulate_bench.sh [path/to/ratelimit]
set -euo pipefail
ratelimit=${1:-build/ratelimit}
runs=${RUNS:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# 1 000 000 arrivals over about 800 s with exponential gaps (mean 0.8 ms, 1.25 x the rate
# below), so that every algorithm both grants and denies.
awk 'BEGIN {
  srand(1); t = 0
  for (i = 0; i < 1000000; i++) { t += -log(1 - rand()) * 0.0008; printf "%.6f\n", t }
}' >"$dir/trace.txt"

# "wall cpu" seconds of the command, from bash's `time`; cpu is user + system time, which
# other jobs on a busy machine disturb less than the wall time.
seconds() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{printf "%.3f %.3f\n", $1, $2 + $3}'
}

measure() {
  local label=$1
  shift
  local times=() best
  for _ in $(seq "$runs"); do
    times+=("$(seconds "$@")")
  done
  best=$(printf '%s\n' "${times[@]}" | sort -n | head -n 1)
  printf '%-44s wall %s s, cpu %s s (best of %s by wall)\n' "$label" "${best% *}" "${best#* }" \
    "$runs"
}

echo "simulate, 1000000 arrivals x 5 algorithms, -r 1000/s:"
measure "trace, try mode, table" "$ratelimit" simulate -r 1000/s --trace "$dir/trace.txt"
measure "trace, wait mode, table" "$ratelimit" simulate -r 1000/s --trace "$dir/trace.txt" \
  --mode wait
measure "poisson profile (~1000000), try mode, table" "$ratelimit" simulate -r 1000/s \
  --profile poisson --duration 1000s
measure "trace, try mode, csv (5000001 rows)" "$ratelimit" simulate -r 1000/s \
  --trace "$dir/trace.txt" --format csv
