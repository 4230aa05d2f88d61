#!/usr/bin/env bash
# What the configuration files cost `try`: with --db and -r (no file is read), on the
# default path with -r and no configuration file (two failed opens: the user's and the
# system's), and `try NAME` with the limit in a small user file. Rounds interleave the
# three, so that the load of the machine falls on each alike. Not a test: CI does not run it.
#   tests/bench/config_bench.sh [path/to/ratelimit]          (default: build/ratelimit)
# Environment: ROUNDS (default 20), PER_ROUND (default 50).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
rounds=${ROUNDS:-20}
per_round=${PER_ROUND:-50}
work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-config-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/bench_exec" "$here/bench_exec.c"

mkdir -p "$work/empty-home" "$work/named-home/.config/ratelimit"
printf '[limits.k]\nrate = "1000000/s"\n\n[limits.other]\nrate = ["10/s", "5000/h"]\n' \
  >"$work/named-home/.config/ratelimit/limits.toml"
base=(env -u RATELIMIT_DB -u RATELIMIT_STORE -u RATELIMIT_CONFIG -u XDG_CONFIG_HOME
  -u XDG_STATE_HOME RATELIMIT_SYSTEM_CONFIG="$work/no-system.toml")
names=("try --db DB -r (no file read)" "try -r, default path, no config file"
  "try NAME, small user file")
commands=(
  "${base[*]} HOME=$work/empty-home $ratelimit --db $work/db try k -r 1000000/s"
  "${base[*]} HOME=$work/empty-home $ratelimit try k -r 1000000/s"
  "${base[*]} HOME=$work/named-home $ratelimit try k"
)
for i in 0 1 2; do
  # shellcheck disable=SC2086 # one word an argument: no path here has a space
  ${commands[i]} >/dev/null # create the databases first
done
for ((round = 0; round < rounds; round++)); do
  for i in 0 1 2; do
    # shellcheck disable=SC2086
    "$work/bench_exec" -n "$per_round" -- ${commands[i]} | awk '{print $1}' >>"$work/times.$i"
  done
done
echo "| try and the configuration files | median | p90 | / --db |"
echo "| --- | --- | --- | --- |"
reference=
for i in 0 1 2; do
  read -r median p90 < <(sort -n "$work/times.$i" | awk '{v[NR] = $1}
    END {printf "%d %d\n", v[int((NR + 1) / 2)], v[int(NR * 0.9)]}')
  reference=${reference:-$median}
  awk -v name="${names[i]}" -v m="$median" -v p="$p90" -v r="$reference" \
    'BEGIN {printf "| %s | %.2f ms | %.2f ms | %.2fx |\n", name, m / 1e6, p / 1e6, m / r}'
done
