# shellcheck shell=bash
# Shared by the benchmark scripts, which source it (it runs nothing by itself): a work
# directory, a redis-server of their own, and the timing of one decision per process.

# bench_work NAME: $work, a new directory, removed at exit with the redis-server that
# bench_redis started there.
bench_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-$1.XXXXXX")
  redis_pid=
  trap bench_cleanup EXIT
}

bench_cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
}

# bench_redis plain|tls: a redis-server on 127.0.0.1 at a free port, $port, its data in
# $work; with `tls`, also on $tls_port (the next port) over TLS, with $work/server.crt and
# server.key, signed by $work/ca.crt. Waits until it is ready; exits when it does not start.
bench_redis() {
  local tls_arguments=()
  for _ in 1 2 3 4 5; do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if [ "$1" = tls ]; then
      tls_port=$((port + 1))
      tls_arguments=(--tls-port "$tls_port" --tls-cert-file "$work/server.crt"
        --tls-key-file "$work/server.key" --tls-ca-cert-file "$work/ca.crt"
        --tls-auth-clients no)
    fi
    redis-server --port "$port" "${tls_arguments[@]}" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$work" >"$work/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 100); do
      # Our own log: a server that finds its port taken exits without this line.
      grep -q "Ready to accept connections" "$work/redis.log" && return 0
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    redis_pid=
  done
  echo "redis-server did not start" >&2
  exit 1
}

# measure DECIDE OUT: runs DECIDE (a command) $calls times, writing each run's latency in
# microseconds to OUT, one a line.
# shellcheck disable=SC2154 # calls: set by the script that sources this file
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

# median_and_p90 FILE: "MEDIAN P90" of the numbers in the first column of FILE.
median_and_p90() {
  sort -n "$1" | awk '{v[NR] = $1} END {printf "%d %d\n", v[int((NR + 1) / 2)], v[int(NR * 0.9)]}'
}

# bench_rounds TITLE RATIO: runs each of "${commands[@]}" once (to create what they use),
# then $rounds rounds of $per_round runs of each through bench_exec.c, the commands
# interleaved so that the load of the machine falls on each alike; prints a Markdown table
# of each one's median and 90th percentile, named by "${names[@]}", and its median's ratio
# to the first's, under the headings TITLE and RATIO.
# shellcheck disable=SC2154 # commands, names, rounds, per_round: set by the script
bench_rounds() {
  local title=$1 ratio=$2 here round i median p90 reference=
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  cc -O2 -o "$work/bench_exec" "$here/bench_exec.c"
  for i in "${!commands[@]}"; do
    # shellcheck disable=SC2086 # one word an argument: no path here has a space
    ${commands[i]} >/dev/null
  done
  for ((round = 0; round < rounds; round++)); do
    for i in "${!commands[@]}"; do
      # shellcheck disable=SC2086
      "$work/bench_exec" -n "$per_round" -- ${commands[i]} | awk '{print $1}' >>"$work/times.$i"
    done
  done
  echo "| $title | median | p90 | $ratio |"
  echo "| --- | --- | --- | --- |"
  for i in "${!commands[@]}"; do
    read -r median p90 < <(median_and_p90 "$work/times.$i")
    reference=${reference:-$median}
    awk -v name="${names[i]}" -v m="$median" -v p="$p90" -v r="$reference" \
      'BEGIN {printf "| %s | %.2f ms | %.2f ms | %.2fx |\n", name, m / 1e6, p / 1e6, m / r}'
  done
}
