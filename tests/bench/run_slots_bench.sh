#!/usr/bin/env bash
# What -j and --until-exit cost `run` for a command that exits at once (`true`): plain
# `run -r`, which executes the command in its own process, against `run -j 4` and
# `run -r --until-exit`, which stay its parent and hold a slot (a liveness file, two
# transactions, a fork). Rounds interleave the three, so that the load of the machine falls
# on each alike. Not a test: CI does not run it.
#   tests/bench/run_slots_bench.sh [path/to/ratelimit]          (default: build/ratelimit)
# Environment: ROUNDS (default 20), PER_ROUND (default 25).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
rounds=${ROUNDS:-20}
per_round=${PER_ROUND:-25}
work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-run-slots-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/bench_exec" "$here/bench_exec.c"

names=("run -r 1000000/s -- true" "run -j 4 -- true" "run -r 1000000/s --until-exit -- true")
commands=(
  "$ratelimit --db $work/db run plain -r 1000000/s -- true"
  "$ratelimit --db $work/db run capped -j 4 -- true"
  "$ratelimit --db $work/db run counted -r 1000000/s --until-exit -- true"
)
for i in 0 1 2; do
  # shellcheck disable=SC2086 # one word an argument: no path here has a space
  ${commands[i]} >/dev/null # create the database and the keys first
done
for ((round = 0; round < rounds; round++)); do
  for i in 0 1 2; do
    # shellcheck disable=SC2086
    "$work/bench_exec" -n "$per_round" -- ${commands[i]} | awk '{print $1}' >>"$work/times.$i"
  done
done
echo "| run, a command that exits at once | median | p90 | / plain run |"
echo "| --- | --- | --- | --- |"
reference=
for i in 0 1 2; do
  read -r median p90 < <(sort -n "$work/times.$i" | awk '{v[NR] = $1}
    END {printf "%d %d\n", v[int((NR + 1) / 2)], v[int(NR * 0.9)]}')
  reference=${reference:-$median}
  awk -v name="${names[i]}" -v m="$median" -v p="$p90" -v r="$reference" \
    'BEGIN {printf "| `%s` | %.2f ms | %.2f ms | %.2fx |\n", name, m / 1e6, p / 1e6, m / r}'
done
