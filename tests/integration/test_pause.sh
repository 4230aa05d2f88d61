#!/usr/bin/env bash
# ratelimit pause, and run --backoff-on: a pause holds every process on the key, on every
# algorithm; it ends by itself, never shortens, ends with reset, and status shows it. Runs
# on both stores.
. "$(dirname "$0")/lib.sh"

ALGORITHMS=$(binary_algorithms)

test_a_pause_holds_try_on_every_algorithm_and_ends_by_itself() {
  local algorithm started retry last_end=0
  for algorithm in $ALGORITHMS; do
    expect_status 0 rl try "$algorithm" -a "$algorithm" -r 100/s
    started=$(now_ms)
    expect_status 0 rl pause "$algorithm" 3s
    last_end=$((started + 3000))
    expect_status 1 rl --json try "$algorithm" -a "$algorithm" -r 100/s || continue
    expect_contains "$ERR" "\"$algorithm\" paused until " "message"
    expect_one_line
    retry=$(json_field "$OUT" retry_after_ms)
    # Up to the end of the pause: 3 s less the time since it began.
    expect_true "$algorithm: retry_after_ms $retry in [3000 - elapsed, 3000]" \
      test "$retry" -le 3000 -a "$retry" -ge $((3000 - ($(now_ms) - started) - 10))
    expect_eq 0 "$(json_field "$OUT" remaining)" "$algorithm: remaining while paused"
    expect_true "$algorithm: paused_until_ms" test -n "$(json_field "$OUT" paused_until_ms)"
  done
  # Every pause has ended by itself a little after the last one's end.
  sleep "$(awk -v ms=$((last_end + 200 - $(now_ms))) 'BEGIN { print (ms > 0 ? ms : 0) / 1000 }')"
  for algorithm in $ALGORITHMS; do
    expect_status 0 rl --json try "$algorithm" -a "$algorithm" -r 100/s
    expect_eq "" "$(json_field "$OUT" paused_until_ms)" "$algorithm: no pause once it ended"
  done
}

# Waiters that ask during the pause, one per algorithm, each a process of its own: none is
# granted before the pause ends.
test_a_pause_holds_wait_and_run_of_other_processes_on_every_algorithm() {
  local algorithm started
  started=$(now_ms)
  for algorithm in $ALGORITHMS held; do
    expect_status 0 rl pause "held-$algorithm" 2s
  done
  for algorithm in $ALGORITHMS; do
    (
      rl wait "held-$algorithm" -a "$algorithm" -r 100/s >/dev/null
      echo "$algorithm $(($(now_ms) - started))" >>"wait-done"
    ) &
  done
  (
    rl run held-held -a token-bucket -r 100/s -- true
    echo "run $(($(now_ms) - started))" >>"wait-done"
  ) &
  wait
  expect_eq 6 "$(wc -l <wait-done)" "waiters granted"
  local name elapsed
  while read -r name elapsed; do
    expect_true "$name granted after $elapsed ms, before the pause of 2 s ended" \
      test "$elapsed" -ge 2000
  done <wait-done
}

# A waiter asleep until its slot when a pause begins goes after the pause (wait, run, pipe):
# shown on a virtual clock by the unit tests of the acquisition loop (test_cli_acquisition),
# and the stores' check under the lock by test_store_sqlite_pauses.

# run -j and --until-exit hold their command while the key is paused, as plain run does:
# a --backoff-on or a `ratelimit pause` stops them too.
test_run_j_and_until_exit_start_nothing_during_a_pause() {
  expect_status 0 rl run held -j 2 -- true
  expect_status 0 rl --json pause held 2s
  local until
  until=$(json_field "$OUT" paused_until_ms)
  expect_status 1 rl run held -j 2 --no-wait -- true
  expect_one_line
  expect_contains "$ERR" 'ratelimit: "held" paused until '
  local form
  for form in "-j 2" "--until-exit -r 5/s" "-j 2 --until-exit -r 5/s" "-j 2 -r 5/s"; do
    # shellcheck disable=SC2086 # the form is words
    (rl run held $form -- sh -c "echo \$(date +%s%3N) $form >>started") &
  done
  wait
  expect_eq 4 "$(wc -l <started)" "commands run"
  local at rest
  while read -r at rest; do
    expect_true "run $rest started at $at ms, before the pause's end at $until ms" \
      test "$at" -ge "$until"
  done <started
}

test_a_pause_never_shortens_and_reset_ends_it() {
  expect_status 0 rl --json pause k 5s
  expect_eq '"k"' "$(json_field "$OUT" key)"
  expect_eq 5000 "$(json_field "$OUT" pause_ms)"
  expect_status 0 rl --json pause k 1s
  local left
  left=$(json_field "$OUT" pause_ms)
  expect_true "a shorter pause keeps the longer one: pause_ms $left" test "$left" -gt 4000
  expect_status 0 rl --json pause k 8s
  expect_eq 8000 "$(json_field "$OUT" pause_ms)" "a longer pause extends it"
  expect_status 1 rl try k -r 1/s
  expect_status 0 rl reset k
  expect_status 0 rl try k -r 1/s
}

test_a_pause_consumes_no_quota() {
  expect_status 0 rl --json try k -r 2/min
  expect_eq 1 "$(json_field "$OUT" remaining)"
  expect_status 0 rl pause k 0.5s
  sleep 0.6
  expect_status 0 rl --json try k -r 2/min
  expect_eq 0 "$(json_field "$OUT" remaining)" "the second unit is still there after the pause"
}

test_status_shows_a_pause() {
  rl try k -r 10/s
  local before after
  before=$(($(now_us) / 1000))
  rl pause k 30s
  after=$(($(now_us) / 1000))
  rl pause only 30
  expect_status 0 rl status || return
  expect_contains "$(head -n 1 <<<"$OUT")" "PAUSED UNTIL" "status header"
  expect_true "the pause's end in the table: $OUT" grep -Eq '^"k" .* 20[0-9-]+T[0-9:.]+Z$' <<<"$OUT"
  expect_true "a key that holds only a pause: $OUT" grep -Eq '^"only" +- +- +- ' <<<"$OUT"
  expect_status 0 rl --json status k
  local until
  until=$(json_field "${OUT#[}" paused_until_ms)
  expect_true "paused_until_ms $until within [$before + 30000, $after + 30001]" \
    test "$until" -ge $((before + 30000)) -a "$until" -le $((after + 30001))
  expect_contains "$OUT" '"paused_until":"20' "status --json"
  expect_status 0 rl --json status only
  expect_contains "$OUT" '"algorithm":null' "a key that holds only a pause"
  # No pause, no column.
  expect_status 0 rl reset k only
  rl try k -r 10/s
  expect_status 0 rl status
  expect_true "no PAUSED UNTIL column without a pause" test "${OUT/PAUSED/}" = "$OUT"
}

# A key made by a pause belongs to no algorithm: the first call gives it one, and the pause
# holds all the same. A fresh key of another algorithm that is paused is taken over too.
# The pauses are long enough for the slowest (sanitized) process starts to fall inside them;
# `wait` then sleeps until each ends, and is granted.
test_a_pause_on_a_new_key_holds_and_any_algorithm_adopts_it() {
  expect_status 0 rl pause fresh 5s
  expect_status 1 rl -q try fresh -a sliding-log -r 5/s
  expect_status 1 rl -q try fresh -a sliding-log -r 5/s
  expect_status 0 rl --json status fresh
  expect_contains "$OUT" '"algorithm":"sliding-log"' "the key's algorithm"
  rl try other -a fixed-window -r 100/s
  sleep 1.1
  expect_status 0 rl pause other 5s
  expect_status 1 rl -q try other -a leaky-bucket -r 5/s
  expect_status 0 rl -q wait fresh -a sliding-log -r 5/s -t 10s
  expect_status 0 rl -q wait other -a leaky-bucket -r 5/s -t 10s
  expect_status 0 rl --json status other
  expect_contains "$OUT" '"algorithm":"leaky-bucket"' "the paused key's new algorithm"
  expect_status 0 rl pause nothing 0
  expect_status 1 rl status nothing
}

test_a_paused_key_is_not_collected_as_fresh() {
  rl pause k 3s
  rl try fresh -r 1000/s -a token-bucket
  sleep 0.1
  if [ "$STORE" = redis ]; then
    local ttl
    ttl=$(rcli PTTL 'ratelimit:{k}')
    expect_true "the paused key expires with its pause: PTTL $ttl" \
      test "$ttl" -gt 2000 -a "$ttl" -le 3001
    return
  fi
  expect_status 0 rl gc -v
  expect_contains "$ERR" '"fresh"' "gc removes the fresh key"
  expect_true "gc keeps the paused key: $ERR" test "${ERR/\"k\"/}" = "$ERR"
  expect_status 0 rl status k
  sleep 3
  expect_status 0 rl gc -v
  expect_contains "$ERR" '"k"' "gc removes the key once the pause has ended"
}

test_pause_usage_errors() {
  expect_status 2 rl pause k
  expect_one_line
  expect_status 2 rl pause k 5parsec
  expect_one_line
  expect_contains "$ERR" 'invalid duration "5parsec"'
  expect_status 2 rl pause "" 1s
  expect_one_line
}

test_a_version_2_database_is_upgraded_with_no_pauses() {
  on_store sqlite || return 0
  sqlite3 "$DB" >/dev/null <<SQL
PRAGMA application_id = 1380732244;
PRAGMA user_version = 2;
PRAGMA journal_mode = WAL;
CREATE TABLE keys (id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE, algorithm TEXT NOT NULL,
  clock INTEGER NOT NULL, limits BLOB NOT NULL, fresh_at INTEGER NOT NULL DEFAULT 0,
  log_period INTEGER NOT NULL DEFAULT 0);
CREATE INDEX keys_by_fresh_at ON keys (fresh_at);
CREATE TABLE grant_log (key_id INTEGER NOT NULL, cumulative INTEGER NOT NULL,
  at INTEGER NOT NULL, PRIMARY KEY (key_id, cumulative)) WITHOUT ROWID;
CREATE INDEX grant_log_by_time ON grant_log (key_id, at);
INSERT INTO keys (name, algorithm, clock, limits) VALUES (CAST('k' AS BLOB), 'token-bucket', 0, X'');
SQL
  expect_status 0 rl status
  expect_eq 8 "$(sqlite3 "$DB" 'PRAGMA user_version')" "schema version after the upgrade"
  expect_eq "0" "$(sqlite3 "$DB" 'SELECT paused_until FROM keys')" "no pause"
  expect_status 0 rl try k -r 1/min
  expect_status 0 rl pause k 1min
  expect_status 1 rl try k -r 10/s
}

# The command learns its key and its store from the environment, and a nested pause reaches
# the same store.
test_run_tells_the_command_its_key_and_store() {
  expect_status 0 rl run envkey -r 10/s -- sh -c 'echo "$RATELIMIT_KEY"'
  expect_eq envkey "$OUT" "RATELIMIT_KEY"
  local store=(--db "$TEST_DIR/other.db")
  if [ "$STORE" = redis ]; then
    store=(--redis-prefix other:)
  fi
  expect_status 0 rl "${store[@]}" run nested -r 10/s -- \
    sh -c "$(printf '%q' "$RATELIMIT") pause \"\$RATELIMIT_KEY\" 30s"
  expect_status 1 rl "${store[@]}" -q try nested -r 10/s
  expect_status 0 rl try nested -r 10/s
  expect_status 0 rl "${store[@]}" --json status nested
  expect_contains "$OUT" paused_until_ms "the nested pause on the store of the run"
}

# A script that exits 75 its first N runs, then 0; it counts its runs in the file `runs`.
fails_first() {
  cat >flaky <<EOF
#!/bin/sh
echo run >>runs
[ "\$(wc -l <runs)" -gt $1 ] || exit 75
exit 0
EOF
  chmod +x flaky
}

test_backoff_retries_after_the_pause() {
  fails_first 2
  local started elapsed
  started=$(now_ms)
  expect_status 0 rl run k -r 100/s --backoff-on 75 --backoff 300ms --retries 5 -- ./flaky
  elapsed=$(($(now_ms) - started))
  expect_eq 3 "$(wc -l <runs)" "runs"
  # Pauses of 300 ms then 600 ms, each lengthened by up to a half.
  expect_true "retried after the pauses: $elapsed ms" test "$elapsed" -ge 880 -a "$elapsed" -le 4000
  expect_contains "$ERR" 'ratelimit: "./flaky" exited with 75: "k" paused for 0.' "first backoff"
  expect_contains "$ERR" "retry 2 of 5 after the pause" "second backoff"
}

test_backoff_passes_other_statuses_through() {
  expect_status 3 rl run k -r 100/s --backoff-on 75 --retries 5 -- sh -c 'echo once >>runs; exit 3'
  expect_eq 1 "$(wc -l <runs)" "runs"
  expect_eq "" "$ERR" "stderr"
  expect_status 0 rl try k -r 100/s
  touch not-executable
  expect_status 126 rl run k -r 100/s --backoff-on 75 -- ./not-executable
  expect_status 127 rl run k -r 100/s --backoff-on 75 -- no-such-command-here
  expect_contains "$ERR" "command not found"
}

test_backoff_retries_run_out_with_the_commands_status() {
  fails_first 100
  expect_status 75 rl --json run k -r 100/s --backoff-on 9 --backoff-on 75 --backoff 100ms \
    --backoff-max 150ms --retries 2 -- ./flaky
  expect_eq 3 "$(wc -l <runs)" "runs"
  expect_eq 3 "$(grep -c '"backoff_ms"' <<<"$OUT")" "one pause object per backoff"
  expect_eq 150 "$(grep '"backoff_ms"' <<<"$OUT" | tail -n 1 | sed 's/.*"backoff_ms":\([0-9]*\).*/\1/')" \
    "the backoff is at most --backoff-max"
  expect_contains "$(tail -n 1 <<<"$OUT")" '"retry":false' "the last backoff"
}

test_backoff_without_retries_pauses_the_key_for_everyone() {
  expect_status 75 rl -q run k -r 100/s --backoff-on 75 --backoff 2s -- sh -c 'exit 75'
  expect_status 1 rl --json try k -r 100/s
  local retry
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "held by the backoff: retry_after_ms $retry" test "$retry" -gt 1500 -a "$retry" -le 3000
}

test_backoff_forwards_signals_to_the_command() {
  "$RATELIMIT" -q run k -r 100/s --backoff-on 75 -- sh -c 'trap "echo got-term >>trapped; exit 75" TERM; echo up >ready; sleep 30 & wait' &
  local pid=$!
  wait_for_file ready
  kill -TERM $pid
  wait $pid
  local status=$?
  expect_eq got-term "$(cat trapped 2>/dev/null)" "the command got SIGTERM"
  expect_eq 75 "$status" "run's status: the command's"
  # A command killed by a signal: 128 + N.
  "$RATELIMIT" run k2 -r 100/s --backoff-on 75 -- sh -c 'echo up >ready2; exec sleep 30' &
  pid=$!
  wait_for_file ready2
  sleep 0.1
  kill -TERM $pid
  wait $pid
  expect_eq 143 "$?" "run's status for a command killed by SIGTERM"
}

test_backoff_usage_errors() {
  expect_status 125 rl run k -r 1/s --retries 3 -- true
  expect_one_line
  expect_contains "$ERR" "--retries applies only with --backoff-on CODE"
  expect_status 125 rl run k -r 1/s --backoff-on 0 -- true
  expect_status 125 rl run k -r 1/s --backoff-on 75 --backoff 10s --backoff-max 1s -- true
  expect_one_line
  expect_contains "$ERR" "--backoff-max 1s is shorter than --backoff 10s"
}

# Four loops of `run` call a stand-in for a strict API (one request in 1.5 s, then 429 with
# Retry-After: 2 and 429 to anything within 2 s) through a wrapper that maps HTTP 429 to
# exit status 75 and pauses the key for Retry-After. After each first 429 no request
# reaches the API for 2 s, and every request is answered 200 in the end. The limit (one a
# second) draws a 429 every other request, and leaves the wrapper a second to pause the key
# before the next slot: a request granted before the pause began still reaches the API
# (a loaded machine, the sanitizers, take hundreds of milliseconds to start the processes).
# On SQLite only: the pause itself is tested on both stores above, and this takes 30 s.
test_four_run_loops_back_off_together_from_a_strict_api() {
  on_store sqlite || return 0
  command -v curl >/dev/null || {
    skip "curl is not installed"
    return 0
  }
  /usr/bin/python3 "$SUITE_DIR/stand_in_api.py" --port-file port --log api.log --limit 1 \
    --period 1.5 --retry-after 2 --lifetime 120 &
  local api=$!
  wait_for_file port
  local port
  port=$(cat port)
  cat >call <<EOF
#!/bin/sh
# GET /\$1; HTTP 429: pause the key for Retry-After, exit 75.
code=\$(curl -s -o /dev/null -D "headers.\$1" -w '%{http_code}' "http://127.0.0.1:$port/\$1")
if [ "\$code" = 429 ]; then
  retry_after=\$(tr -d '\r' <"headers.\$1" | sed -n 's/^[Rr]etry-[Aa]fter: *//p')
  $(printf '%q' "$RATELIMIT") pause "\$RATELIMIT_KEY" "\${retry_after:-1}"
  exit 75
fi
[ "\$code" = 200 ]
EOF
  chmod +x call
  local loop i loops=()
  for loop in 1 2 3 4; do
    (
      for i in 1 2; do
        rl -q run api -a token-bucket -r 1/s -b 1 --backoff-on 75 --backoff 100ms --retries 10 \
          -- ./call "$loop-$i" || echo "loop $loop request $i: status $?" >>failures
      done
    ) &
    loops+=($!)
  done
  wait "${loops[@]}"
  kill $api
  wait $api 2>/dev/null
  expect_eq "" "$(cat failures 2>/dev/null)" "requests that ran out of retries"
  local path
  for loop in 1 2 3 4; do
    for i in 1 2; do
      path=/$loop-$i
      expect_true "request $path answered 200" grep -q " 200 $path\$" api.log
    done
  done
  expect_true "the API answered 429 at least once: $(cat api.log)" grep -q " 429 " api.log
  # Each 429 that opened a penalty: nothing arrived in the 2 s after it.
  local violations
  violations=$(sort -n api.log | awk '
    $2 == 429 && $1 >= penalty_end { penalty_end = $1 + 2; opened = $1; next }
    $1 < penalty_end { print "request " $3 " at " $1 ", " $1 - opened " s after the 429 at " opened }')
  expect_eq "" "$violations" "requests within 2 s of a 429"
  echo "    arrivals: $(awk '{printf "%s ", $2}' api.log)"
}

run_suite
