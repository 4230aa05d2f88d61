#!/usr/bin/env bash
# Benchmark of the Redis store (not a test): one decision per process, against the recipe
# users write by hand (`redis-cli INCR` + `EXPIRE` from a shell script), alone and with 8
# processes on one key. Starts its own redis-server on 127.0.0.1 at a free port.
#   tests/bench/redis_bench.sh [path/to/ratelimit] [calls per measurement, default 400]
set -euo pipefail
ratelimit=$(realpath "${1:-build/ratelimit}")
calls=${2:-400}
work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-bench.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

for attempt in 1 2 3 4 5; do
  port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    >"$work/redis.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    # Fails until the server listens: not an error here.
    ours=$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p') ||
      true
    [ "$ours" = "$pid" ] && break 2
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  pid=
done
[ -n "$pid" ] || { echo "redis-server did not start" >&2; exit 1; }
export RATELIMIT_STORE="redis://127.0.0.1:$port"

# One decision each way, as a shell script would make it. The limit is never reached.
decide_ratelimit() { "$ratelimit" try bench -r 1000000000/s; }
decide_recipe() {
  local n
  n=$(redis-cli -p "$port" INCR bench:recipe)
  redis-cli -p "$port" EXPIRE bench:recipe 60 >/dev/null
  [ "$n" -le 1000000000 ]
}

# Runs `calls` decisions with $1, writing each one's latency in microseconds to $2.
measure() {
  local decide=$1 out=$2 i start end
  : >"$out"
  for ((i = 0; i < calls; i++)); do
    start=${EPOCHREALTIME/./}
    "$decide"
    end=${EPOCHREALTIME/./}
    echo $((end - start)) >>"$out"
  done
}

# percentile FILE P: the P-th percentile of the numbers in FILE, in milliseconds.
percentile() {
  sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END {
    i = int((NR * p + 99) / 100); if (i < 1) i = 1; printf "%.2f", v[i] / 1000 }'
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
