#!/usr/bin/env bash
# Counters and `metrics`: what decisions count, what status shows, the Prometheus text (read
# by a strict checker of the format), --output replaced atomically, reset and gc.
. "$(dirname "$0")/lib.sh"

PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3
CHECKER="$SUITE_DIR/check_prometheus_text.py"

# Runs a Python expression on the JSON read from stdin, bound to `j`.
json_eval() {
  "$PYTHON" -c 'import json, sys
j = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1"
}

# Checks the metrics text in $OUT (whose last line feed the shell took), or in FILE, with the
# strict checker; the samples, as JSON, go to $SAMPLES.
expect_valid_metrics() {
  if [ $# = 1 ]; then
    SAMPLES=$("$PYTHON" "$CHECKER" "$1" 2>"$TEST_DIR/checker")
  else
    SAMPLES=$(printf '%s\n' "$OUT" | "$PYTHON" "$CHECKER" - 2>"$TEST_DIR/checker")
  fi
  if [ $? != 0 ]; then
    fail "not valid exposition text: $(cat "$TEST_DIR/checker"): $OUT"
    return 1
  fi
}

# The value of the sample NAME whose labels are LABELS (a Python dict literal), from
# $SAMPLES; empty when there is none.
sample() {
  json_eval "next((s['value'] for s in j if s['name'] == '$1' and s['labels'] == $2), '')" \
    <<<"$SAMPLES"
}

test_counters_after_granted_and_limited_calls() {
  expect_status 0 rl try api -r 2/min -a token-bucket
  expect_status 0 rl try api -r 2/min -a token-bucket
  expect_status 1 rl -q try api -r 2/min -a token-bucket
  expect_status 1 rl -q try api -r 2/min -a token-bucket
  expect_status 0 rl --json status api
  expect_eq "{'granted': 2, 'limited': 2, 'waited_ms': 0, 'throttled': 0}" "$(json_eval 'j[0]["counters"]' <<<"$OUT")" \
    "counters in status --json"
  expect_status 0 rl status api
  expect_contains "$(head -n 1 <<<"$OUT")" "GRANTED  LIMITED  WAITED"
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq 2.0 "$(sample ratelimit_requests_total "{'key': 'api', 'result': 'granted'}")" granted
  expect_eq 2.0 "$(sample ratelimit_requests_total "{'key': 'api', 'result': 'limited'}")" limited
  expect_eq 0.0 "$(sample ratelimit_wait_seconds_total "{'key': 'api'}")" "wait seconds"
  expect_eq 0.0 "$(sample ratelimit_remaining "{'key': 'api'}")" remaining
  # A wait refused beyond its timeout is limited too; run --no-wait counts as try does.
  expect_status 1 rl -q wait api -r 2/min -a token-bucket -t 1s
  expect_status 1 rl -q run api -r 2/min -a token-bucket --no-wait -- true
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq 4.0 "$(sample ratelimit_requests_total "{'key': 'api', 'result': 'limited'}")" limited
}

test_wait_seconds_after_a_wait() {
  expect_status 0 rl try w -r 1/s -r 100/h -a token-bucket
  # The second slot is about a second away: wait sleeps for it, and run for the third. The
  # hourly limit keeps the key from being fresh (and gone from Redis) before status looks.
  expect_status 0 rl wait w -r 1/s -r 100/h -a token-bucket
  expect_status 0 rl run w -r 1/s -r 100/h -a token-bucket -- true
  expect_status 0 rl metrics
  expect_valid_metrics || return
  local waited
  waited=$(sample ratelimit_wait_seconds_total "{'key': 'w'}")
  expect_true "waited $waited s in all, expected about 2 s" \
    "$PYTHON" -c "import sys; sys.exit(not 1.0 <= $waited <= 2.0)"
  expect_eq 3.0 "$(sample ratelimit_requests_total "{'key': 'w', 'result': 'granted'}")" granted
  expect_status 0 rl --json status w
  local waited_ms
  waited_ms=$(json_eval 'j[0]["counters"]["waited_ms"]' <<<"$OUT")
  expect_true "waited_ms $waited_ms against $waited s" \
    "$PYTHON" -c "import sys; sys.exit(abs($waited_ms / 1000 - $waited) > 1e-6)"
}

test_metrics_text_of_odd_keys_is_valid() {
  local keys=('quo"te' $'new\nline' 'back\slash' 'ütf-8 ключ 🔑' $'tab\there' '{braces}' '%25')
  local key
  for key in "${keys[@]}"; do
    expect_status 0 rl try -r 1/min -a token-bucket -- "$key"
  done
  # Not UTF-8: a label value cannot carry it as it is.
  expect_status 0 rl try -r 1/min -a token-bucket -- $'raw\xff'
  expect_status 0 rl try -r 1/min -a token-bucket -- $'raw\xfe'
  expect_status 0 rl metrics
  expect_valid_metrics || return
  for key in "${keys[@]}"; do
    expect_eq 1 "$(KEY=$key json_eval "sum(1 for s in j if s['name'] == 'ratelimit_requests_total'
      and s['labels'] == {'key': __import__('os').environ['KEY'], 'result': 'granted'})" \
      <<<"$SAMPLES")" "the sample of key $(printf %q "$key")"
  done
  # Each key that is not UTF-8: U+FFFD in key, its bytes in key_hex, a series of its own.
  expect_eq 1.0 "$(sample ratelimit_requests_total \
    "{'key': 'raw\ufffd', 'key_hex': '726177ff', 'result': 'granted'}")" "raw\\xff"
  expect_eq 0.0 "$(sample ratelimit_remaining "{'key': 'raw\ufffd', 'key_hex': '726177fe'}")" \
    "raw\\xfe"
  expect_eq 63 "$(json_eval 'len(j)' <<<"$SAMPLES")" "samples: 9 keys, 7 series each"
}

test_metrics_families_and_help() {
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq "[]" "$SAMPLES" "samples of an empty store"
  expect_contains "$OUT" "# TYPE ratelimit_requests_total counter"
  expect_contains "$OUT" "# TYPE ratelimit_wait_seconds_total counter"
  expect_contains "$OUT" "# TYPE ratelimit_remaining gauge"
  expect_contains "$OUT" "# TYPE ratelimit_paused_seconds gauge"
  expect_contains "$OUT" "# TYPE ratelimit_running gauge"
  expect_contains "$OUT" "# HELP ratelimit_paused_seconds "
  expect_contains "$OUT" "# HELP ratelimit_running "
  expect_contains "$OUT" "# HELP ratelimit_requests_total "
  if [ "$STORE" = sqlite ]; then
    expect_true "metrics created the database" test ! -e "$DB"
  fi
  expect_status 0 rl metrics --help
  expect_contains "$OUT" "--output"
}

test_gauges_of_a_pause_and_of_the_run_slots() {
  expect_status 0 rl try api -r 5/min -a token-bucket
  expect_status 0 rl pause held 60s
  # Two commands run on the slots of jobs, a third waits for one; each runs until `hold` goes.
  touch hold
  local i
  for i in 1 2 3; do
    rl run jobs -j 2 -- sh -c 'touch "started.$1"; while [ -e hold ]; do sleep 0.05; done' sh "$i" &
  done
  wait_for_started 2
  expect_status 0 rl metrics
  expect_valid_metrics || { rm -f hold; wait; return 1; }
  expect_eq 2.0 "$(sample ratelimit_running "{'key': 'jobs'}")" "running on jobs"
  expect_eq 0.0 "$(sample ratelimit_running "{'key': 'api'}")" "running on api"
  expect_eq 0.0 "$(sample ratelimit_paused_seconds "{'key': 'api'}")" "api paused"
  local paused
  paused=$(sample ratelimit_paused_seconds "{'key': 'held'}")
  expect_true "held paused for $paused s more, expected 30 to 60" \
    "$PYTHON" -c "import sys; sys.exit(not 30 <= float('$paused') <= 60)"
  expect_eq 0.0 "$(sample ratelimit_remaining "{'key': 'held'}")" "held remaining"
  rm hold
  wait
  expect_eq 3 "$(find . -name 'started.*' | wc -l)" "commands run"
  # Done: no command runs, and a key with neither a state nor commands has no sample.
  expect_status 0 rl metrics
  expect_valid_metrics || return
  local after
  after=$(sample ratelimit_running "{'key': 'jobs'}")
  expect_true "running on jobs after the end: '$after', expected 0 or no sample" \
    test "$after" = "" -o "$after" = 0.0
  expect_eq 0.0 "$(sample ratelimit_running "{'key': 'held'}")" "running on held"
}

test_output_replaces_the_file_atomically() {
  rl try k -r 5/min -a token-bucket
  expect_status 0 sh -c "umask 022; exec \"\$0\" metrics --output metrics.prom" "$RATELIMIT"
  expect_eq "" "$OUT$ERR" "output"
  expect_eq 644 "$(stat -c %a metrics.prom)" "mode under umask 022"
  expect_valid_metrics metrics.prom || return
  expect_eq 1.0 "$(sample ratelimit_requests_total "{'key': 'k', 'result': 'granted'}")" granted
  local inode
  inode=$(stat -c %i metrics.prom)
  # A reader that opened the old file reads it whole, while a new one takes its name.
  exec 7<metrics.prom
  rl try k -r 5/min -a token-bucket
  expect_status 0 sh -c "umask 027; exec \"\$0\" metrics -o metrics.prom" "$RATELIMIT"
  expect_true "the file was replaced by a rename" test "$(stat -c %i metrics.prom)" != "$inode"
  expect_eq 640 "$(stat -c %a metrics.prom)" "mode under umask 027"
  expect_contains "$(cat <&7)" 'ratelimit_requests_total{key="k",result="granted"} 1'
  exec 7<&-
  expect_contains "$(cat metrics.prom)" 'ratelimit_requests_total{key="k",result="granted"} 2'
  expect_eq "metrics.prom" "$(ls | grep metrics)" "files left beside it"
}

test_output_is_never_seen_in_part() {
  local i
  # An hourly rate: no key is fresh (and gone from Redis, with its gauge) while this runs.
  for i in $(seq 30); do
    rl try "key$i" -r 5/h -a token-bucket
  done
  rl metrics -o metrics.prom
  local whole
  whole=$(wc -l <metrics.prom)
  # Rewritten in a loop while read: every read sees a whole file.
  (for i in $(seq 40); do rl metrics -o metrics.prom || exit 1; done) &
  local writer=$! reads=0 lines
  while kill -0 "$writer" 2>/dev/null; do
    lines=$(wc -l <metrics.prom)
    [ "$lines" = "$whole" ] || fail "a read saw $lines lines of $whole"
    reads=$((reads + 1))
  done
  wait "$writer" || fail "a metrics --output failed"
  expect_true "the file was read while being replaced ($reads reads)" test "$reads" -gt 5
}

test_output_that_cannot_be_written() {
  rl try k -r 5/min -a token-bucket
  expect_status 4 rl metrics --output missing/metrics.prom
  expect_one_line
  expect_eq 'ratelimit: cannot write "missing/metrics.prom": no such file or directory' "$ERR"
  mkdir taken
  expect_status 4 rl metrics --output taken
  expect_one_line
  expect_contains "$ERR" 'ratelimit: cannot write "taken": '
  expect_eq "" "$(ls | grep tmp)" "files left"
  if [ "$(id -u)" != 0 ]; then
    mkdir locked
    chmod 555 locked
    expect_status 4 rl metrics --output locked/metrics.prom
    expect_eq 'ratelimit: cannot write "locked/metrics.prom": permission denied' "$ERR"
  fi
  expect_status 2 rl metrics --output ''
  expect_one_line
}

test_reset_clears_the_counters() {
  rl try a -r 1/min -a token-bucket
  rl -q try a -r 1/min -a token-bucket
  rl try b -r 1/min -a token-bucket
  expect_status 0 rl reset a
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq "" "$(sample ratelimit_requests_total "{'key': 'a', 'result': 'granted'}")" "a after reset"
  expect_eq 1.0 "$(sample ratelimit_requests_total "{'key': 'b', 'result': 'granted'}")" b
  rl try a -r 1/min -a token-bucket
  expect_status 0 rl --json status a
  expect_eq 1 "$(json_eval 'j[0]["counters"]["granted"]' <<<"$OUT")" "counted from zero"
  expect_status 0 rl --json reset --all
  expect_eq 2 "$(json_field "$OUT" removed)" "removed"
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq "[]" "$SAMPLES" "samples after reset --all"
}

test_counters_outlive_the_state_of_a_fresh_key() {
  rl try fresh -r 10/s -a token-bucket
  rl try fresh -r 10/s -a token-bucket
  # Fresh again within 200 ms: Redis lets its state expire, gc forgets it from SQLite.
  sleep 0.5
  [ "$STORE" = sqlite ] && rl gc
  # status shows what metrics shows: the key, by its counters.
  expect_status 0 rl --json status fresh
  expect_eq "[{'key': 'fresh', 'algorithm': None, 'counters': {'granted': 2, 'limited': 0, 'waited_ms': 0, 'throttled': 0}}]" \
    "$(json_eval j <<<"$OUT")" "status of a key with counters only"
  expect_status 0 rl status
  expect_true "a line for fresh in: $OUT" grep -Eq '^"fresh" +- +- +- +- +- +- +2 +0 ' <<<"$OUT"
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq 2.0 "$(sample ratelimit_requests_total "{'key': 'fresh', 'result': 'granted'}")" \
    "granted after the state went"
  expect_eq "" "$(sample ratelimit_remaining "{'key': 'fresh'}")" "a gauge without a state"
  rl try fresh -r 10/s -a token-bucket
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq 3.0 "$(sample ratelimit_requests_total "{'key': 'fresh', 'result': 'granted'}")" \
    "counting on"
}

# Keys used only through run slots (run -j, --until-exit) or only paused are in status and
# metrics; a command refused a slot counts as limited, one started on it as granted.
test_keys_of_run_slots_and_pauses_are_in_status_and_metrics() {
  expect_status 0 rl run jobs -j 2 -- true
  expect_status 0 rl run api -r 5/s --until-exit -- true
  expect_status 0 rl pause held 60s
  touch hold
  "$RATELIMIT" run busy -j 1 -- sh -c 'touch started.1; while [ -e hold ]; do sleep 0.05; done' &
  wait_for_started 1
  expect_status 1 rl -q run busy -j 1 --no-wait -- true
  expect_status 1 rl -q run busy -j 1 -t 0.2s -- true
  expect_status 1 rl -q run api -r 1/min --until-exit --no-wait -- true
  rm hold
  wait
  local key
  for key in jobs api held busy; do
    expect_status 0 rl status "$key"
  done
  expect_status 0 rl --json status
  expect_eq "['api', 'busy', 'held', 'jobs']" "$(json_eval '[k["key"] for k in j]' <<<"$OUT")" \
    "keys in status --json"
  expect_eq "[(1, 1), (1, 2), (0, 0), (1, 0)]" \
    "$(json_eval '[(k["counters"]["granted"], k["counters"]["limited"]) for k in j]' <<<"$OUT")" \
    "granted and limited in status --json"
  expect_status 0 rl metrics
  expect_valid_metrics || return
  expect_eq 1.0 "$(sample ratelimit_requests_total "{'key': 'jobs', 'result': 'granted'}")" \
    "jobs granted"
  expect_eq 2.0 "$(sample ratelimit_requests_total "{'key': 'busy', 'result': 'limited'}")" \
    "busy limited"
  expect_eq 1.0 "$(sample ratelimit_requests_total "{'key': 'api', 'result': 'limited'}")" \
    "api limited"
  for key in jobs api busy held; do
    expect_eq 0.0 "$(sample ratelimit_running "{'key': '$key'}")" "running on $key"
  done
  expect_status 1 rl status never-used
  expect_contains "$ERR" 'unknown key "never-used"'
}

test_the_checker_rejects_what_is_not_the_format() {
  local bad
  while IFS= read -r bad; do
    if printf '%b' "$bad" | "$PYTHON" "$CHECKER" - >/dev/null 2>&1; then
      fail "the checker accepted: $bad"
    fi
  done <<'CASES'
x_total 1\n
# TYPE x_total counter\nx_total{key="a\\x"} 1\n
# TYPE x_total counter\nx_total{key="a} 1\n
# TYPE x_total counter\nx_total{key="a",key="b"} 1\n
# TYPE x_total counter\nx_total{1key="a"} 1\n
# TYPE x_total counter\nx_total one\n
# TYPE x_total counter\nx_total -1\n
# TYPE x_total counter\nx_total 1
# TYPE x counter\nx 1\n
# TYPE x_total counter\n# TYPE x_total counter\n
# TYPE x_total counter\nx_total{k="\\xff"} 1\n
# TYPE x_total counter\nx_total{k="\xff"} 1\n
# TYPE x_total counter\nx_total{k="a"} 1\nx_total{k="a"} 2\n
# TYPE x_total counter\n# TYPE y gauge\ny 1\nx_total 1\n
# TYPE x_total counter\nx_total 1\n# TYPE x_total counter\n
# TYPE y sometype\ny 1\n
# HELP y bad \\t escape\n# TYPE y gauge\n
CASES
  printf '# HELP x_total a \\\\ b\n# TYPE x_total counter\nx_total{k="\\"\\n\\\\"} 1.5e3\n' |
    "$PYTHON" "$CHECKER" - >/dev/null || fail "the checker refused valid text"
}

run_suite
