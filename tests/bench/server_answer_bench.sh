#!/usr/bin/env bash
# The server's word: 40 curl calls through `xargs -P 8 ratelimit run api ...` against the
# stand-in API (tests/integration/stand_in_api.py) that allows 10 requests per 5-second
# window, sends GitHub's X-RateLimit-* fields (or the IETF ones) and Retry-After, and whose
# quota another client of the same account spends at 1 request a second. Prints, for each
# way of calling, the answers 429 our calls drew, the calls that failed (a 429 is a lost
# call unless something retries it), and the time taken against the time the quota allows
# (our share is 5 per window: 40 calls take 8 windows, 40 s). Not a test.
# The other client's answers 429 are counted apart: on a shared quota, whoever comes second
# in a window is refused.
#   tests/bench/server_answer_bench.sh [path/to/ratelimit] [github|ietf] [fixed|sliding]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
fields=${2:-github}
window=${3:-fixed}
. "$here/lib.sh"
bench_work server-answer
export RATELIMIT_DB=$work/ratelimit.db
unset RATELIMIT_STORE

api_pid=
start_api() {
  rm -f "$work/port" "$work/api.log"
  /usr/bin/python3 "$here/../integration/stand_in_api.py" --port-file "$work/port" \
    --log "$work/api.log" --limit 10 --period 5 --window "$window" --fields "$fields" \
    --retry-after auto --other-rate 1 --lifetime 300 &
  api_pid=$!
  for _ in $(seq 100); do
    [ -s "$work/port" ] && break
    sleep 0.05
  done
  port=$(cat "$work/port")
}
stop_api() { kill "$api_pid" 2>/dev/null && wait "$api_pid" 2>/dev/null || true; }
trap 'stop_api; bench_cleanup' EXIT

# measure NAME RUN-OPTIONS...: one pass of 40 calls; prints a row.
measure() {
  local name=$1
  shift
  "$ratelimit" reset --all >/dev/null 2>&1 || true
  start_api
  local started ended
  started=$(date +%s%N)
  # shellcheck disable=SC2016 # expanded by the inner shell
  seq 40 | xargs -P 8 -I{} "$ratelimit" run api "$@" -- \
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/item/{}" >"$work/codes" \
    2>"$work/errors" || true
  ended=$(date +%s%N)
  stop_api
  printf '%-28s %5d %6d %8.1f s %6.2fx %8d\n' "$name" "$(grep -c ' 429 /item/' "$work/api.log")" \
    "$((40 - $(grep -c '^200$' "$work/codes")))" "$(((ended - started) / 1000000))e-3" \
    "$(((ended - started) / 400000000))e-2" "$(grep -c ' 429 (other)' "$work/api.log")"
}

echo "40 calls, xargs -P 8, against 10 per 5 s ($window windows, $fields fields, Retry-After)," \
  "another client at 1/s"
printf '%-28s %5s %6s %10s %7s %8s\n' "run options" "429s" "failed" "time" "÷ 40 s" "other's"
measure "-r 10/5s" -r 10/5s
measure "-r 10/5s --observe" -r 10/5s --observe
