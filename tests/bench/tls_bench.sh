#!/usr/bin/env bash
# Benchmark of Redis over TLS (not a test): one `try` per process, cold (each process makes
# its own TCP connection and TLS handshake; no session resumption across processes), over
# rediss:// against redis:// to the same server. Starts its own redis-server on 127.0.0.1
# with a plain and a TLS port, its certificate signed by a CA made here (EC P-256).
#   tests/bench/tls_bench.sh [path/to/ratelimit] [calls per measurement, default 300]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ratelimit=$(realpath "${1:-build/ratelimit}")
calls=${2:-300}
bench_work tls-bench

ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
(
  cd "$work"
  openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca
  openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=127.0.0.1
  printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt
) >"$work/openssl.log" 2>&1

bench_redis tls
export RATELIMIT_STORE_CA=$work/ca.crt

decide_plain() { "$ratelimit" --store "redis://127.0.0.1:$port" try bench -r 1000000000/s; }
decide_tls() { "$ratelimit" --store "rediss://127.0.0.1:$tls_port" try bench -r 1000000000/s; }

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
