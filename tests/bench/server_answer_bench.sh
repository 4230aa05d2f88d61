#!/usr/bin/env bash
# The server's word: 40 curl calls through `xargs -P 8 ratelimit run api ...` against the
# stand-in API (tests/integration/stand_in_api.py) that allows 10 requests per 5-second
# window (fixed windows by default, as GitHub counts), sends GitHub's X-RateLimit-* fields or
# the IETF RateLimit ones, and Retry-After until the quota has room. Prints, for each way of
# calling, the answers 429 our calls drew, the calls that failed (a 429 is a lost call unless
# something retries it), the time taken, and its ratio to the time the quota allows, and the
# answers 429 the other client drew. Not a test.
#
# The scenarios: another client of the same account spending the quota at 1 request a
# second, with each kind of fields; then none, with a limit of ours set too high (-r 20/5s).
# The time the quota allows: with the other client, our share of each window is what it
# leaves (5), so 40 calls take 8 windows, 40 s; alone, 10 a window, 20 s. Each window that a
# call starts in counts whole: the first call waits for nothing.
#   tests/bench/server_answer_bench.sh [path/to/ratelimit] [fixed|sliding] [runs]
# With RATELIMIT_STORE=redis://... the key lives in that Redis instead of a SQLite file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
window=${2:-fixed}
runs=${3:-1}
. "$here/lib.sh"
bench_work server-answer
export RATELIMIT_DB=$work/ratelimit.db

api_pid=
# start_api FIELDS OTHER_RATE
start_api() {
  rm -f "$work/port" "$work/api.log"
  /usr/bin/python3 "$here/../integration/stand_in_api.py" --port-file "$work/port" \
    --log "$work/api.log" --limit 10 --period 5 --window "$window" --fields "$1" \
    --retry-after auto --other-rate "$2" --lifetime 300 &
  api_pid=$!
  for _ in $(seq 100); do
    [ -s "$work/port" ] && break
    sleep 0.05
  done
  port=$(cat "$work/port")
}
stop_api() { kill "$api_pid" 2>/dev/null && wait "$api_pid" 2>/dev/null || true; }
trap 'stop_api; bench_cleanup' EXIT

# measure NAME FIELDS OTHER_RATE QUOTA_SECONDS RUN-OPTIONS...: one pass of 40 calls; prints
# a row.
measure() {
  local name=$1 fields=$2 other=$3 quota=$4
  shift 4
  "$ratelimit" reset --all >/dev/null 2>&1 || true
  start_api "$fields" "$other"
  local started ended
  started=$(date +%s%N)
  seq 40 | xargs -P 8 -I{} "$ratelimit" run api "$@" -- \
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/item/{}" >"$work/codes" \
    2>"$work/errors" || true
  ended=$(date +%s%N)
  stop_api
  local ours failed elapsed_ms
  ours=$(grep -c ' 429 /item/' "$work/api.log" || true)
  failed=$((40 - $(grep -c ' 200 /item/' "$work/api.log" || true)))
  elapsed_ms=$(((ended - started) / 1000000))
  printf '%-46s %-6s %5d %6d %8.1f s %6.2fx %8d\n' "$name" "$fields" "$ours" "$failed" \
    "${elapsed_ms}e-3" "$((elapsed_ms / (quota * 10)))e-2" \
    "$(grep -c ' 429 (other)' "$work/api.log" || true)"
}

echo "40 calls, xargs -P 8, against 10 per 5 s ($window windows, Retry-After);" \
  "${RATELIMIT_STORE:-sqlite}"
printf '%-46s %-6s %5s %6s %10s %7s %8s\n' "run options" "fields" "429s" "failed" "time" \
  "÷ quota" "other's"
for _ in $(seq "$runs"); do
  measure "-r 10/5s (other client at 1/s)" github 1 40 -r 10/5s
  measure "-r 10/5s --observe --retries 5 (other at 1/s)" github 1 40 \
    -r 10/5s --observe --retries 5
  measure "-r 10/5s --observe --retries 5 (other at 1/s)" ietf 1 40 \
    -r 10/5s --observe --retries 5
  measure "-r 20/5s --observe --retries 5 (alone)" github 0 20 -r 20/5s --observe --retries 5
  measure "-r 20/5s --observe --retries 5 (alone)" ietf 0 20 -r 20/5s --observe --retries 5
done
