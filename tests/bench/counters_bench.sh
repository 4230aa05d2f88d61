#!/usr/bin/env bash
# What counting costs a decision: `try` denied (which wrote nothing before the counters)
# and `try` granted, with a ratelimit that counts and one that does not (built from a
# commit before the counters), each on a database of its own; on Redis too when
# redis-server is installed. Rounds interleave the two binaries, so that the load of the
# machine falls on each alike; with perf installed, also the page faults of one try (each
# page of code or data a process first touches costs one, 12-30 us here), which the load
# of the machine does not blur. Not a test: CI does not run it.
#   tests/bench/counters_bench.sh path/to/ratelimit-without-counters [path/to/ratelimit]
# Environment: ROUNDS (default 20), PER_ROUND (default 50).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
baseline=$(realpath "${1:?usage: counters_bench.sh BASELINE_RATELIMIT [RATELIMIT]}")
ratelimit=$(realpath "${2:-$here/../../build/ratelimit}")
rounds=${ROUNDS:-20}
per_round=${PER_ROUND:-50}
work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-counters-bench.XXXXXX")
redis_pid=
cleanup() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
cc -O2 -o "$work/bench_exec" "$here/bench_exec.c"

base=(env -u RATELIMIT_DB -u RATELIMIT_STORE -u RATELIMIT_CONFIG)
names=() commands=() bare=()
add() { # NAME BINARY ARGS...
  names+=("$1")
  shift
  commands+=("${base[*]} $*")
  bare+=("$*")
}
for which in baseline counting; do
  binary=$baseline
  [ $which = counting ] && binary=$ratelimit
  add "sqlite, try denied, $which" "$binary --db $work/$which.db try -q denied -r 1/h"
  add "sqlite, try granted, $which" "$binary --db $work/$which.db try granted -r 1000000/s"
done
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  port=$((20000 + RANDOM % 40000))
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    >"$work/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
  for which in baseline counting; do
    binary=$baseline
    [ $which = counting ] && binary=$ratelimit
    # One prefix each: the baseline's script never sees the counting one's keys.
    add "redis, try denied, $which" \
      "$binary --store redis://127.0.0.1:$port --redis-prefix $which: try -q denied -r 1/h"
  done
fi
for i in "${!commands[@]}"; do
  # shellcheck disable=SC2086 # one word an argument: no path here has a space
  ${commands[i]} >/dev/null || true # create the databases, and use up the denied key
done
for ((round = 0; round < rounds; round++)); do
  for i in "${!commands[@]}"; do
    # shellcheck disable=SC2086
    "$work/bench_exec" -n "$per_round" -- ${commands[i]} >>"$work/runs.$i"
  done
done
echo "| scenario | median | p90 | counting / not |"
echo "| --- | --- | --- | --- |"
declare -A medians
for i in "${!commands[@]}"; do
  # Exit statuses: granted 0, denied 1; anything else is a failure of the run.
  if awk '$2 != 0 && $2 != 1 {bad = 1} END {exit !bad}' "$work/runs.$i"; then
    echo "${names[i]}: runs failed" >&2
    exit 1
  fi
  read -r median p90 < <(awk '{print $1}' "$work/runs.$i" | sort -n | awk '{v[NR] = $1}
    END {printf "%d %d\n", v[int((NR + 1) / 2)], v[int(NR * 0.9)]}')
  scenario=${names[i]%, *}
  ratio=
  if [ "${names[i]##*, }" = counting ]; then
    ratio=$(awk -v m="$median" -v r="${medians[$scenario]}" 'BEGIN {printf "%.2fx", m / r}')
  else
    medians[$scenario]=$median
  fi
  awk -v name="${names[i]}" -v m="$median" -v p="$p90" -v r="$ratio" \
    'BEGIN {printf "| %s | %.2f ms | %.2f ms | %s |\n", name, m / 1e6, p / 1e6, r}'
done
if command -v perf >/dev/null; then
  echo
  echo "| scenario | page faults per try (perf stat -r 50) |"
  echo "| --- | --- |"
  for i in "${!commands[@]}"; do
    # The binary itself, not env: the environment of this script has no RATELIMIT_* left.
    # shellcheck disable=SC2086
    faults=$(unset RATELIMIT_DB RATELIMIT_STORE RATELIMIT_CONFIG
      perf stat -r 50 -x, -e page-faults ${bare[i]} 2>&1 >/dev/null |
        awk -F, '/page-faults/ {print $1}') || true
    echo "| ${names[i]} | $faults |"
  done
fi
