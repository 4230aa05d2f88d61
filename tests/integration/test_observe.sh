#!/usr/bin/env bash
# observe and run --observe: what a server's answer does to a key, on either store; the
# response head read from a file, standard input, or curl's --dump-header; and the stand-in
# API that the tests of the server's word run against.
. "$(dirname "$0")/lib.sh"

# head FILE STATUS [FIELD...]: writes a response head as curl -D writes it (CRLF).
head_file() {
  local file=$1 status=$2
  shift 2
  {
    printf 'HTTP/1.1 %s Reason\r\n' "$status"
    printf '%s\r\n' "$@"
    printf '\r\n'
  } >"$file"
}

# A field of the "budget" object of a JSON line (remaining, reset_after_ms); empty when the
# budget is null.
budget_field() {
  printf '%s\n' "$1" | sed -n "s/.*\"budget\":{[^}]*\"$2\":\([^,}]*\).*/\1/p" | head -n 1
}

# The pause of KEY as status --json shows it, in milliseconds from now (0 when none).
pause_left_ms() {
  local until
  until=$(json_field "$("$RATELIMIT" --json status "$1")" paused_until_ms)
  if [ -z "$until" ]; then
    echo 0
  else
    echo $((until - $(now_ms)))
  fi
}

test_retry_after_pauses_the_key_for_everyone() {
  head_file h.txt 429 'Retry-After: 3' 'Content-Type: text/plain'
  expect_status 0 rl observe api --headers h.txt || return
  expect_eq "" "$ERR" "stderr"
  expect_status 1 rl try api -r 100/s
  expect_contains "$ERR" "paused until"
  local left
  left=$(pause_left_ms api)
  expect_true "a pause of about 3 s: $left ms left" test "$left" -gt 1500 -a "$left" -le 3100
}

test_an_http_date_and_the_last_head_count() {
  local date
  date=$(LC_ALL=C date -u -d '@'$(($(date +%s) + 4)) '+%a, %d %b %Y %H:%M:%S GMT')
  printf 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved\r\nRetry-After: 100\r\n\r\nHTTP/2 503\nretry-after: %s\n\n' \
    "$date" >h.txt
  expect_status 0 rl --json observe api --headers h.txt || return
  expect_eq 503 "$(json_field "$OUT" status)" "status"
  expect_eq 3 "$(json_field "$OUT" heads)" "heads read"
  expect_eq '"retry-after"' "$(json_field "$OUT" pause)" "pause"
  local left
  left=$(pause_left_ms api)
  expect_true "a pause until the date, 3 to 4 s: $left ms left" test "$left" -gt 1500 -a "$left" -le 4100
}

test_a_long_retry_after_is_capped_with_a_warning() {
  head_file h.txt 429 'Retry-After: 7200'
  expect_status 0 rl --json observe api --headers h.txt --max-pause 2s || return
  expect_contains "$ERR" "warning: Retry-After asks for a pause of 2h00m00s"
  expect_contains "$ERR" "(--max-pause)"
  expect_eq true "$(json_field "$OUT" capped)" "capped"
  expect_eq 2000 "$(json_field "$OUT" pause_ms)" "pause_ms"
  expect_status 0 rl -q observe api --headers h.txt --max-pause 1s
  expect_eq "" "$ERR" "stderr under -q"
  head_file long.txt 429 'Retry-After: 900'
  expect_status 0 rl --json observe other --headers long.txt
  expect_eq 300000 "$(json_field "$OUT" pause_ms)" "pause_ms under the default --max-pause"
}

test_429_or_503_without_retry_after_backs_off_a_second() {
  expect_status 0 rl --json observe api --status 503 || return
  expect_eq '"throttled"' "$(json_field "$OUT" pause)" "pause"
  local ms
  ms=$(json_field "$OUT" pause_ms)
  expect_true "the backoff's first pause, 1 to 1.5 s: $ms ms" test "$ms" -ge 1000 -a "$ms" -le 1500
  expect_status 1 rl try api -r 100/s
}

test_an_answer_that_asks_no_pause_leaves_a_budget() {
  head_file h.txt 200 'X-RateLimit-Limit: 5000' 'X-RateLimit-Remaining: 4999' \
    "X-RateLimit-Reset: $(($(date +%s) + 3600))" 'Retry-After: 30' 'RateLimit: "p";r=oops'
  expect_status 0 rl --json observe api --headers h.txt || return
  expect_eq '"none"' "$(json_field "$OUT" pause)" "pause"
  expect_contains "$OUT" '"standings":[{"field":"x-ratelimit-remaining","policy":"","remaining":4999,'
  expect_contains "$OUT" '"policies":[{"field":"x-ratelimit-limit","policy":"","quota":5000,"window_ms":null}]'
  expect_contains "$OUT" '"note":"read as epoch seconds (10^9 or more)"'
  expect_contains "$OUT" '{"field":"ratelimit","value":"\"p\";r=oops","note":"'
  # No pause, but the quota's standing: a budget of 4999 until the reset, at most --max-pause
  # (5min) away, and the policy.
  expect_contains "$OUT" '"budget":{"remaining":4999,'
  expect_status 0 rl --json status api
  expect_eq 4999 "$(json_field "$OUT" remaining)" "remaining"
  expect_contains "$OUT" '"policies":[{"field":"x-ratelimit-limit","policy":"","quota":5000,"window_ms":null}]'
  local reset
  reset=$(budget_field "$OUT" reset_after_ms)
  expect_true "the reset cut to 5min: $reset ms" test "$reset" -gt 290000 -a "$reset" -le 300000
  # A policy alone holds nothing: no key is made for it.
  head_file p.txt 200 'RateLimit-Policy: "default";q=10;w=5'
  expect_status 0 rl observe other --headers p.txt
  expect_status 1 rl status other
}

test_standard_input_and_given_values() {
  printf 'HTTP/1.1 200 OK\r\n\r\n' | rl --json observe api --headers - --status 429 --retry-after 2 \
    >out 2>err
  expect_eq 0 "$?" "status" || return
  expect_eq 429 "$(json_field "$(cat out)" status)" "status"
  expect_eq '"retry-after"' "$(json_field "$(cat out)" pause)" "pause"
  expect_status 1 rl try api -r 100/s
  # An empty --retry-after is no value ("$(...)" of a head without one).
  expect_status 0 rl --json observe other --status 200 --retry-after ''
  expect_eq '"none"' "$(json_field "$OUT" pause)" "pause"
}

test_what_is_not_a_head_exits_2_with_one_line() {
  printf '{"error": "rate limited"}\n' >body.json
  expect_status 2 rl observe api --headers body.json
  expect_one_line
  expect_contains "$ERR" "not an HTTP response head"
  : >empty
  expect_status 2 rl observe api --headers empty
  expect_one_line
  expect_status 2 rl observe api --headers missing.txt
  expect_contains "$ERR" "cannot read --headers"
  expect_status 2 rl observe api
  expect_contains "$ERR" "nothing to observe"
  expect_status 2 rl observe api --retry-after soon
  expect_one_line
  expect_contains "$ERR" '--retry-after: invalid Retry-After "soon"'
  expect_status 2 rl observe api --status 42
  expect_status 2 rl observe api --status 429 --max-pause 0
  expect_contains "$ERR" "--max-pause"
  head -c 1100000 /dev/zero | tr '\0' 'x' >big
  expect_status 2 rl observe api --headers big
  expect_contains "$ERR" "larger than 1 MiB"
  # No pause came of any of them.
  expect_status 1 rl status api
}

# --- run --observe ---------------------------------------------------------------------------

# A command that is not curl writes its head to $RATELIMIT_HEADERS, a private file that is
# gone after the command.
test_run_observe_gives_the_command_a_private_file() {
  cat >call <<'SH'
#!/bin/sh
printf '%s\n' "$RATELIMIT_HEADERS" >where
stat -c %a "$RATELIMIT_HEADERS" >mode
printf 'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\n\r\n' >"$RATELIMIT_HEADERS"
exit 7
SH
  chmod +x call
  export TMPDIR=$TEST_DIR/tmp
  mkdir -p "$TMPDIR"
  expect_status 7 rl run api -r 100/s --observe -- ./call || return
  expect_eq 600 "$(cat mode)" "mode of the file"
  expect_contains "$(cat where)" "$TMPDIR/ratelimit-headers."
  expect_eq "" "$(ls "$TMPDIR")" "files left in TMPDIR"
  expect_status 1 rl try api -r 100/s
  expect_contains "$ERR" "paused until"
  # A command that writes nothing: nothing observed, nothing said.
  expect_status 0 rl run quiet -r 100/s --observe -- true
  expect_eq "" "$ERR" "stderr"
  expect_eq 0 "$(pause_left_ms quiet)" "pause of a key whose command wrote no head"
  # One that writes something else: a warning, the command's status.
  expect_status 3 rl run other -r 100/s --observe -- sh -c 'echo hello >"$RATELIMIT_HEADERS"; exit 3'
  expect_contains "$ERR" "warning: --observe: nothing observed"
  expect_eq "" "$(ls "$TMPDIR")" "files left in TMPDIR"
}

test_run_observe_refuses_max_pause_alone() {
  expect_status 125 rl run api -r 1/s --max-pause 1s -- true
  expect_contains "$ERR" "--max-pause applies only with --observe"
}

# curl gets --dump-header: a 429 with Retry-After pauses the key; the recipe runs in xargs -I{}.
test_run_observe_adds_dump_header_to_curl_in_xargs() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  start_api api.log --limit 2 --period 30 --window sliding --retry-after 4
  export TMPDIR=$TEST_DIR/tmp
  mkdir -p "$TMPDIR"
  seq 3 | xargs -P 1 -I{} "$RATELIMIT" run api -r 100/s --observe -- \
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$API_PORT/{}" >codes 2>errors
  local status=$?
  stop_api
  expect_eq 0 "$status" "xargs" || return
  expect_eq "200 200 429" "$(tr '\n' ' ' <codes | sed 's/ $//')" "answers"
  expect_eq "" "$(cat errors)" "errors"
  expect_eq "" "$(ls "$TMPDIR")" "files left in TMPDIR"
  local left
  left=$(pause_left_ms api)
  expect_true "paused for Retry-After: 4 s: $left ms left" test "$left" -gt 2000 -a "$left" -le 4100
}

# The user's own -D FILE is read and left; -D - cannot be read: a warning.
test_run_observe_reads_the_user_s_dump_header() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  start_api api.log --limit 0 --retry-after 2
  rl run api -r 100/s --observe -- curl -s -o /dev/null -sD mine.txt "http://127.0.0.1:$API_PORT/a" \
    2>errors
  expect_eq 0 "$?" "status"
  expect_true "the user's file is left" grep -q '^HTTP/1.0 429' mine.txt
  expect_status 1 rl try api -r 100/s
  rl run other -r 100/s --observe -- curl -s -o /dev/null -D - "http://127.0.0.1:$API_PORT/b" \
    >out 2>errors
  stop_api
  expect_contains "$(cat errors)" "(-D -): nothing observed"
  expect_true "the head went to standard output" grep -q '^HTTP/1.0 429' out
  expect_eq 0 "$(pause_left_ms other)" "pause of a key whose head went to standard output"
}

# The quota the answers report holds every process of the key until its reset: with a rate
# of ours far above the server's (50/s against 4 per 2 s), the calls draw at most two answers
# 429 (those that left before any answer came), and --retries makes every call succeed.
test_run_observe_follows_the_quota_the_answers_report() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  start_api api.log --limit 4 --period 2 --window fixed --fields github --retry-after auto
  seq 12 | xargs -P 4 -I{} "$RATELIMIT" run api -r 50/s --observe --retries 5 -- \
    curl -s -o /dev/null "http://127.0.0.1:$API_PORT/item/{}" 2>errors
  local status=$?
  stop_api
  expect_eq 0 "$status" "xargs" || return
  expect_eq 12 "$(grep -c ' 200 /item/' api.log)" "calls that succeeded"
  local throttled
  throttled=$(grep -c ' 429 /item/' api.log)
  expect_true "at most 2 answers 429, not $throttled" test "$throttled" -le 2
  OUT=$(rl status api --json)
  expect_contains "$OUT" "\"throttled\":$throttled"
  expect_contains "$OUT" '"policies":[{'
}

# --- the stand-in API -------------------------------------------------------------------------

test_the_stand_in_api_sends_its_quota_fields_and_changes_its_limit() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  start_api api.log --limit 2 --period 60 --fields github,ietf,draft --retry-after auto \
    --other-rate 4 --then 1.5:100/60
  local i
  for i in 1 2 3; do
    curl -s -o /dev/null -D "h$i.txt" "http://127.0.0.1:$API_PORT/$i"
  done
  sleep 2
  curl -s -o /dev/null -D h4.txt "http://127.0.0.1:$API_PORT/4"
  stop_api
  expect_true "429 once the other client spent the quota: $(head -1 h3.txt)" grep -q '^HTTP/1.0 429' h3.txt
  expect_true "Retry-After on the 429" grep -qi '^Retry-After: [1-9]' h3.txt
  expect_true "GitHub's fields" grep -q '^X-RateLimit-Reset: [0-9]\{10\}' h1.txt
  expect_true "the IETF fields" grep -q '^RateLimit: "default";r=[0-9]*;t=[0-9]*' h1.txt
  expect_true "the IETF policy" grep -q '^RateLimit-Policy: "default";q=2;w=60' h1.txt
  expect_true "the older draft's" grep -q '^RateLimit-Reset: [0-9]' h1.txt
  expect_true "the limit raised to 100: $(grep -i policy h4.txt)" grep -q 'q=100;w=60' h4.txt
  expect_true "the other client logged" grep -q ' (other)$' api.log
  expect_true "a request accepted after the change" grep -q ' 200 /4$' api.log
}

run_suite
