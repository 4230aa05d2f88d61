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
. "$here/lib.sh"
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
rounds=${ROUNDS:-20}
per_round=${PER_ROUND:-25}
bench_work run-slots-bench

names=("\`run -r 1000000/s -- true\`" "\`run -j 4 -- true\`"
  "\`run -r 1000000/s --until-exit -- true\`")
commands=(
  "$ratelimit --db $work/db run plain -r 1000000/s -- true"
  "$ratelimit --db $work/db run capped -j 4 -- true"
  "$ratelimit --db $work/db run counted -r 1000000/s --until-exit -- true"
)
bench_rounds "run, a command that exits at once" "/ plain run"
