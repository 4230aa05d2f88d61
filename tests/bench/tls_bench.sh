#!/usr/bin/env bash
# Benchmark of Redis over TLS (not a test): one `try` per process, over redis:// (plain TCP),
# over rediss:// cold (RATELIMIT_TLS_SESSION_CACHE=off: a full TLS 1.3 handshake each time),
# over rediss:// resuming by itself the session the previous process kept in the state
# directory (here $work/state; RATELIMIT_TLS_RELAY=off), and over rediss:// through the TLS
# relay (the default: the process speaks to a relay that keeps OpenSSL loaded, whose worker
# has connected ahead, resuming the session), all to the same server; over rediss:// with the
# CA given (--store-ca) and with the CA among the system's. Starts its own
# redis-server on 127.0.0.1 with a plain and a TLS port, its certificate signed by a CA made
# here (EC P-256).
# Prints the median and 99th percentile of the wall time of a call, the mean CPU time (user
# and system) of the ratelimit process, and the server's mean CPU time per call; then what
# loading and starting OpenSSL costs a C program (tests/bench/openssl_floor.c), against a
# TCP try.
#   tests/bench/tls_bench.sh [path/to/ratelimit] [N, default 300: 3 N calls of each kind]
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
export XDG_STATE_HOME=$work/state
# As a managed Redis service is reached: its CA among the system's, which OpenSSL reads from
# its CA file ($SSL_CERT_FILE, else Debian's /etc/ssl/certs/ca-certificates.crt).
cat /etc/ssl/certs/ca-certificates.crt "$work/ca.crt" >"$work/system-cas.pem"
cc -O2 -o "$work/bench_exec" "$(dirname "$0")/bench_exec.c"
cc -O2 -o "$work/openssl_floor" "$(dirname "$0")/openssl_floor.c" -ldl
cc -O2 -o "$work/empty" "$(dirname "$0")/empty.c"

# The CPU time redis-server has used (user and system), in microseconds.
server_cpu() {
  redis-cli -p "$port" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ { t += $2 } END { printf "%d\n", t * 1e6 }'
}

# decide KIND COUNT: COUNT calls over redis:// (plain), over rediss:// with the session cache
# off (cold) or on (resumed), the CA given with --store-ca or among the system's (system-cold,
# system-resumed); one line each, "WALL_NS STATUS CPU_NS", appended to $work/KIND, and the
# server's CPU time for them, in microseconds, to $work/KIND.server.
decide() {
  local url=rediss://127.0.0.1:$tls_port setting=on relay=on ca=$work/ca.crt before
  case $1 in
    plain) url=redis://127.0.0.1:$port ;;
    cold) setting=off ;;
    resumed) relay=off ;;
    system-cold) setting=off ca= ;;
    system-relayed) ca= ;;
  esac
  before=$(server_cpu)
  RATELIMIT_TLS_SESSION_CACHE=$setting RATELIMIT_TLS_RELAY=$relay RATELIMIT_STORE_CA=$ca \
    SSL_CERT_FILE=$work/system-cas.pem \
    "$work/bench_exec" -n "$2" -- "$ratelimit" --store "$url" try bench -r 1000000000/s \
    >>"$work/$1"
  echo "$(($(server_cpu) - before)) $2" >>"$work/$1.server"
}

kinds=(plain cold resumed relayed system-cold system-relayed)
# Loads the script, warms the page cache, keeps the sessions, starts the relays.
decide resumed 20
decide relayed 5
decide system-relayed 5
for kind in "${kinds[@]}"; do
  : >"$work/$kind"
  : >"$work/$kind.server"
done
# Ten calls of each in turn, their order rotated, so that a change in the machine's load falls
# on all alike.
for ((i = 0; i < 3 * calls / 10; i++)); do
  for ((j = 0; j < ${#kinds[@]}; j++)); do
    decide "${kinds[(i + j) % ${#kinds[@]}]}" 10
  done
done
if awk '$2 != 0 {bad = 1} END {exit !bad}' "${kinds[@]/#/$work/}"; then
  echo "some calls failed" >&2
  exit 1
fi

# stats KIND: the median and 99th percentile of the wall time and the mean CPU time, in ms.
stats() {
  sort -n "$work/$1" | awk '{ wall[NR] = $1; cpu += $3 } END {
    printf "%.2f %.2f %.2f\n", wall[int((NR + 1) / 2)] / 1e6, wall[int((NR * 99 + 99) / 100)] / 1e6,
      cpu / NR / 1e6 }'
}
# server_stats KIND: the server's mean CPU time per call, in ms.
server_stats() {
  awk '{ t += $1; n += $2 } END { printf "%.3f\n", t / n / 1e3 }' "$work/$1.server"
}
read -r plain_median _ plain_cpu < <(stats plain)
plain_server=$(server_stats plain)
echo "try, one process each ($(wc -l <"$work/plain") calls each; wall: median, p99; CPU: mean)"
printf '%-34s %9s %9s %6s %9s %6s %9s %6s\n' "" "wall" "p99" "/ TCP" "CPU" "/ TCP" \
  "server" "/ TCP"
for kind in "${kinds[@]}"; do
  case $kind in
    plain) name="redis:// (TCP)" ;;
    cold) name="rediss:// --store-ca, cold" ;;
    resumed) name="rediss:// --store-ca, resumed" ;;
    relayed) name="rediss:// --store-ca, relay" ;;
    system-cold) name="rediss:// system CAs, cold" ;;
    system-relayed) name="rediss:// system CAs, relay" ;;
  esac
  read -r median p99 cpu < <(stats "$kind")
  awk -v n="$name" -v m="$median" -v p="$p99" -v c="$cpu" -v s="$(server_stats "$kind")" \
    -v rm="$plain_median" -v rc="$plain_cpu" -v rs="$plain_server" 'BEGIN {
      printf "%-34s %6.2f ms %6.2f ms %5.2fx %6.2f ms %5.2fx %6.3f ms %5.2fx\n",
        n, m, p, m / rm, c, c / rc, s, s / rs }'
done

# The floor: what a process pays for OpenSSL before any connection, against a TCP try, in
# rounds of ten of each in turn.
floors=("$work/empty" "$work/openssl_floor 1" "$work/openssl_floor 2" "$work/openssl_floor 3"
  "$ratelimit --store redis://127.0.0.1:$port try bench -r 1000000000/s")
for ((i = 0; i < calls / 10; i++)); do
  for j in "${!floors[@]}"; do
    # shellcheck disable=SC2086 # one word an argument: no path here has a space
    "$work/bench_exec" -n 10 -- ${floors[j]} >>"$work/floor.$j"
  done
done
tcp_median=$(sort -n "$work/floor.4" | awk '{ w[NR] = $1 } END { print w[int((NR + 1) / 2)] }')
echo
echo "what OpenSSL costs a process before it connects ($(wc -l <"$work/floor.0") runs each; median)"
for j in 0 1 2 3 4; do
  case $j in
    0) name="empty C program" ;;
    1) name="C: dlopen libssl.so.3" ;;
    2) name="C: ... + OPENSSL_init_ssl" ;;
    3) name="C: ... + SSL_CTX_new" ;;
    4) name="ratelimit try, redis:// (TCP)" ;;
  esac
  sort -n "$work/floor.$j" | awk -v n="$name" -v t="$tcp_median" '{ w[NR] = $1 } END {
    m = w[int((NR + 1) / 2)]; printf "%-34s %6.2f ms %5.2fx of a TCP try\n", n, m / 1e6, m / t }'
done
