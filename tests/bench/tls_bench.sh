#!/usr/bin/env bash
# Benchmark of Redis over TLS (not a test): one `try` per process, cold (each process makes
# its own TCP connection and TLS handshake; no session resumption across processes), over
# rediss:// against redis:// to the same server. Starts its own redis-server on 127.0.0.1
# with a plain and a TLS port, its certificate signed by a CA made here (EC P-256).
#   tests/bench/tls_bench.sh [path/to/ratelimit] [calls per measurement, default 300]
set -euo pipefail
ratelimit=$(realpath "${1:-build/ratelimit}")
calls=${2:-300}
work=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-tls-bench.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
(
  cd "$work"
  openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca
  openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=127.0.0.1
  printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt
) >"$work/openssl.log" 2>&1

for attempt in 1 2 3 4 5; do
  port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  tls_port=$((port + 1))
  redis-server --port "$port" --tls-port "$tls_port" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$work" --tls-cert-file "$work/server.crt" \
    --tls-key-file "$work/server.key" --tls-ca-cert-file "$work/ca.crt" \
    --tls-auth-clients no >"$work/redis.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q "Ready to accept connections" "$work/redis.log" && break 2
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  pid=
done
[ -n "$pid" ] || { echo "redis-server did not start" >&2; exit 1; }
export RATELIMIT_STORE_CA=$work/ca.crt

decide_plain() { "$ratelimit" --store "redis://127.0.0.1:$port" try bench -r 1000000000/s; }
decide_tls() { "$ratelimit" --store "rediss://127.0.0.1:$tls_port" try bench -r 1000000000/s; }

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

measure decide_tls "$work/warmup" # loads the script, warms the page cache
# Interleaved rounds, so that a change in the machine's load falls on both alike.
: >"$work/plain"
: >"$work/tls"
for round in 1 2 3; do
  measure decide_plain "$work/round"
  cat "$work/round" >>"$work/plain"
  measure decide_tls "$work/round"
  cat "$work/round" >>"$work/tls"
done
plain=$(percentile "$work/plain" 50)
tls=$(percentile "$work/tls" 50)
printf '%-36s %8s %8s\n' "try, one process each ($((3 * calls)) calls)" "median" "p99"
printf '%-36s %6s ms %6s ms\n' "redis:// (TCP)" "$plain" "$(percentile "$work/plain" 99)"
printf '%-36s %6s ms %6s ms\n' "rediss:// (TLS 1.3, P-256, cold)" "$tls" \
  "$(percentile "$work/tls" 99)"
awk -v a="$tls" -v b="$plain" 'BEGIN { printf "rediss:// / redis:// (median)       %8.2fx\n", a / b }'
