#!/usr/bin/env bash
# --adaptive against a limit the server keeps secret: 300 curl calls through `xargs -P 8
# ratelimit run api -r 50/s --adaptive --observe --retries 5` against the stand-in API
# (tests/integration/stand_in_api.py --secret) that allows 5 requests a second in fixed
# windows and says so only with 429 and Retry-After. Prints, per scenario, the answers 429
# (and their share of the calls), the calls that failed, the time taken and its ratio to the
# time the secret limit allows, then the key's learned rate over time (status --json, read
# every second), and, where the stand-in raises its limit to 10/s 30 s in, how long the rate
# took to reach 7/s after the raise. Not a test.
#
# The scenarios: the limit found from a ceiling ten times too high; the same with the limit
# raised mid-run (450 calls: 150 at 5/s, then 300 at 10/s, 60 s at the least); and, for
# comparison, the first without --adaptive.
#   tests/bench/adaptive_bench.sh [path/to/ratelimit] [runs]
# With RATELIMIT_STORE=redis://... the key lives in that Redis instead of a SQLite file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
runs=${2:-1}
. "$here/lib.sh"
bench_work adaptive
export RATELIMIT_DB=$work/ratelimit.db

api_pid=
sampler_pid=
stop() {
  local pid
  for pid in $sampler_pid $api_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  sampler_pid= api_pid=
}
trap 'stop; bench_cleanup' EXIT

# measure NAME CALLS LEAST_SECONDS THEN RUN-OPTIONS...: one pass; THEN is the stand-in's
# --then (empty: none). Prints a row, then the rate over time.
measure() {
  local name=$1 calls=$2 least=$3 then=$4
  shift 4
  "$ratelimit" reset --all >/dev/null 2>&1 || true
  rm -f "$work/port" "$work/api.log" "$work/rates"
  local api_args=(--port-file "$work/port" --log "$work/api.log" --limit 5 --period 1
    --window fixed --secret --lifetime 600)
  [ -n "$then" ] && api_args+=(--then "$then")
  /usr/bin/python3 "$here/../integration/stand_in_api.py" "${api_args[@]}" &
  api_pid=$!
  for _ in $(seq 100); do
    [ -s "$work/port" ] && break
    sleep 0.05
  done
  local port started ended
  port=$(cat "$work/port")
  started=$(date +%s%N)
  (
    while sleep 1; do
      printf '%s %s\n' "$((($(date +%s%N) - started) / 1000000))" \
        "$("$ratelimit" --json status api 2>/dev/null |
          sed -n 's/.*"rate_per_s":\([0-9.]*\).*/\1/p')"
    done
  ) >"$work/rates" &
  sampler_pid=$!
  seq "$calls" | xargs -P 8 -I{} "$ratelimit" run api "$@" -q -- \
    curl -s -o /dev/null "http://127.0.0.1:$port/item/{}" 2>"$work/errors" || true
  ended=$(date +%s%N)
  stop
  local throttled failed elapsed_ms
  throttled=$(grep -c ' 429 /item/' "$work/api.log" || true)
  failed=$((calls - $(grep -c ' 200 /item/' "$work/api.log" || true)))
  elapsed_ms=$(((ended - started) / 1000000))
  printf '%-44s %5d %5d %5d%% %6d %8.1f s %6.2fx\n' "$name" "$calls" "$throttled" \
    "$((100 * throttled / calls))" "$failed" "${elapsed_ms}e-3" \
    "$((elapsed_ms / (least * 10)))e-2"
  if [ -s "$work/rates" ] && grep -q ' [0-9]' "$work/rates"; then
    printf '    rate/s every 5 s:'
    awk 'NR % 5 == 0 && $2 != "" { printf " %.1f", $2 }' "$work/rates"
    printf '\n'
  fi
  if [ -n "$then" ]; then
    local raised_ms=$((${then%%:*} * 1000))
    awk -v from="$raised_ms" '$1 >= from && $2 >= 7 { printf "    7/s reached %.1f s after the raise\n", ($1 - from) / 1000; found = 1; exit }
      END { if (!found) print "    7/s not reached after the raise" }' "$work/rates"
  fi
}

echo "against a secret 5/s (fixed windows, 429 and Retry-After only), xargs -P 8;" \
  "${RATELIMIT_STORE:-sqlite}"
printf '%-44s %5s %5s %6s %6s %10s %7s\n' "run options" "calls" "429s" "share" "failed" \
  "time" "÷ least"
for _ in $(seq "$runs"); do
  measure "-r 50/s --adaptive --observe --retries 5" 300 60 "" \
    -r 50/s --adaptive --observe --retries 5
  measure "same, the limit raised to 10/s at 30 s" 450 60 30:10/1 \
    -r 50/s --adaptive --observe --retries 5
  measure "-r 50/s --observe --retries 5 (no --adaptive)" 300 60 "" \
    -r 50/s --observe --retries 5
done
