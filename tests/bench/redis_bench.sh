#!/usr/bin/env bash
# Benchmark of the Redis store (not a test): one decision per process, against the recipe
# users write by hand (`redis-cli INCR` + `EXPIRE` from a shell script), alone and with 8
# processes on one key. Starts its own redis-server on 127.0.0.1 at a free port.
#   tests/bench/redis_bench.sh [path/to/ratelimit] [calls per measurement, default 400]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ratelimit=$(realpath "${1:-build/ratelimit}")
calls=${2:-400}
bench_work bench
bench_redis plain
export RATELIMIT_STORE="redis://127.0.0.1:$port"

# One decision each way, as a shell script would make it. The limit is never reached.
decide_ratelimit() { "$ratelimit" try bench -r 1000000000/s; }
decide_recipe() {
  local n
  n=$(redis-cli -p "$port" INCR bench:recipe)
  redis-cli -p "$port" EXPIRE bench:recipe 60 >/dev/null
  [ "$n" -le 1000000000 ]
}

# Eight processes at once; prints decisions per second and leaves latencies in $2.
concurrent() {
  local decide=$1 out=$2 start end job
  start=${EPOCHREALTIME/./}
  for job in 1 2 3 4 5 6 7 8; do
    measure "$decide" "$work/job.$job" &
  done
  wait
  end=${EPOCHREALTIME/./}
  cat "$work"/job.* >"$out"
  rm -f "$work"/job.*
  echo $((8 * calls * 1000000 / (end - start)))
}

measure decide_ratelimit "$work/warmup" # loads the script, warms the page cache
for way in ratelimit recipe; do
  measure "decide_$way" "$work/$way.alone"
  eval "${way}_throughput=\$(concurrent decide_$way $work/$way.eight)"
done

echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $calls calls per measurement, $(nproc) cores"
printf '%-28s %12s %12s %14s %12s\n' "" "median ms" "p99 ms" "8 procs /s" "8-proc p99"
for way in ratelimit recipe; do
  label="ratelimit try"
  [ "$way" = recipe ] && label="redis-cli INCR + EXPIRE"
  throughput_var=${way}_throughput
  printf '%-28s %12s %12s %14s %12s\n' "$label" "$(percentile "$work/$way.alone" 50)" \
    "$(percentile "$work/$way.alone" 99)" "${!throughput_var}" \
    "$(percentile "$work/$way.eight" 99)"
done
ratio=$(awk -v a="$(percentile "$work/ratelimit.alone" 50)" \
  -v b="$(percentile "$work/recipe.alone" 50)" 'BEGIN { printf "%.1f", b / a }')
echo "one decision: ratelimit is ${ratio}x faster than the recipe (goal: 2x)"
