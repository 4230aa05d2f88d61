#!/usr/bin/env bash
# What the configuration files cost `try`: with --db and -r (no file is read), on the
# default path with -r and no configuration file (two failed opens: the user's and the
# system's), and `try NAME` with the limit in a small user file. Rounds interleave the
# three, so that the load of the machine falls on each alike. Not a test: CI does not run it.
#   tests/bench/config_bench.sh [path/to/ratelimit]          (default: build/ratelimit)
# Environment: ROUNDS (default 20), PER_ROUND (default 50).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
rounds=${ROUNDS:-20}
per_round=${PER_ROUND:-50}
bench_work config-bench

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
bench_rounds "try and the configuration files" "/ --db"
