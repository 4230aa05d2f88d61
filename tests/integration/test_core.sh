#!/usr/bin/env bash
# try / wait / run on the SQLite store: exit statuses, bad input, concurrency, sleeping,
# signals, foreign files.
. "$(dirname "$0")/lib.sh"

test_try_grants_then_limits() {
  # The default, the sliding log: the first grant leaves the window 10 s later.
  expect_status 0 rl try api -r 2/10s
  expect_status 0 rl try api -r 2/10s
  expect_status 1 rl try api -r 2/10s
  expect_one_line
  expect_contains "$ERR" 'ratelimit: "api" limited (sliding-log 2/10s); next slot in '
}

test_limited_exit_code_and_quiet() {
  rl try k -r 1/min >/dev/null
  expect_status 5 rl -E 5 try k -r 1/min
  expect_status 1 rl try -q k -r 1/min
  expect_eq "" "$ERR" "stderr with -q"
}

test_global_options_after_the_command() {
  rl try k -r 1/min
  expect_status 75 rl try k -r 1/min --json -E 75 -q
  expect_eq false "$(json_field "$OUT" allowed)" "allowed"
  expect_eq "" "$ERR" "stderr with -q"
  expect_status 75 rl wait k -r 1/min -t 1s -E 75 -q
  expect_status 75 rl run k -r 1/min --no-wait -E 75 -q -- true
  expect_status 75 rl -E 75 run k -r 1/min -t 1s -- true
}

test_db_after_the_command() {
  on_store sqlite || return 0
  expect_status 0 rl try k -r 1/min --db other.db
  expect_true "--db after the command names the database" test -s other.db
  expect_status 1 rl -q try k -r 1/min --db other.db
  expect_status 0 rl try k -r 1/min --db=third.db
}

# The first argument that names a command is not always the command: it can be a key, or
# the value of an option given before the command.
test_command_names_as_keys_and_option_values() {
  expect_status 0 rl try wait -r 1/min
  expect_status 1 rl -q try wait -r 1/min
  expect_status 0 rl --redis-prefix wait try k -r 1/min
  expect_status 1 rl -q --redis-prefix wait try k -r 1/min
  expect_status 0 rl --redis-prefix gc run status -r 1/min -- echo ran
  expect_eq ran "$OUT" "output of run"
}

test_json_fields() {
  expect_status 0 rl --json try api -r 10/min -b 4 -c 3
  expect_eq '"api"' "$(json_field "$OUT" key)"
  expect_eq true "$(json_field "$OUT" allowed)"
  expect_eq '"token-bucket"' "$(json_field "$OUT" algorithm)"
  expect_eq 10 "$(json_field "$OUT" limit)"
  expect_eq 60000 "$(json_field "$OUT" period_ms)"
  expect_eq 4 "$(json_field "$OUT" burst)"
  expect_eq 3 "$(json_field "$OUT" cost)"
  expect_eq 1 "$(json_field "$OUT" remaining)"
  expect_eq 0 "$(json_field "$OUT" retry_after_ms)"
  # 3 tokens at 10/min take 18 s to come back.
  expect_eq 18000 "$(json_field "$OUT" reset_after_ms)"
  expect_status 1 rl --json try api -r 10/min -b 4 -c 3
  local retry
  retry=$(json_field "$OUT" retry_after_ms)
  # Two more tokens are needed: 12 s, less the time since the first call, rounded up.
  expect_true "retry_after_ms $retry in (10000, 12000]" test "$retry" -gt 10000 -a "$retry" -le 12000
}

# status shows durations as the countdown does and rates in their largest unit.
test_status_shows_durations_and_rates_as_the_countdown_does() {
  rl try d -r 1/7200s -a token-bucket
  expect_status 0 rl status d || return
  expect_contains "$OUT" '1/2h burst 1'
  expect_true "status shows hours: $OUT" grep -Eq '  [12]h[0-5][0-9]m[0-5][0-9]s  +[12]h[0-5][0-9]m[0-5][0-9]s ' <<<"$OUT"
}

# Only the buckets take a burst: the window algorithms' JSON has none.
test_json_has_a_burst_only_for_the_buckets() {
  local algorithm
  for algorithm in fixed-window sliding-window sliding-log; do
    expect_status 0 rl --json try "w-$algorithm" -r 5/s -r 100/min -a "$algorithm"
    expect_true "no burst for $algorithm: $OUT" test "${OUT#*burst}" = "$OUT"
    expect_status 0 rl --json status "w-$algorithm"
    expect_true "no burst in status for $algorithm: $OUT" test "${OUT#*burst}" = "$OUT"
  done
  # Per minute: the key is not fresh (gone from Redis) before status looks.
  expect_status 0 rl --json try b -r 5/min -b 7 -a leaky-bucket
  expect_eq 7 "$(json_field "$OUT" burst)" "leaky-bucket burst"
  expect_status 0 rl --json status b
  expect_contains "$OUT" '"burst":7'
}

test_bad_input_exits_2_with_one_line() {
  local args
  while IFS='|' read -r expected args; do
    # shellcheck disable=SC2086
    expect_status 2 rl $args || continue
    expect_one_line || continue
    expect_contains "$ERR" "$expected" "stderr of: $args"
  done <<'CASES'
invalid rate "0/s": the count is zero|try k -r 0/s
invalid rate "-1/s": the count is negative|try k -r -1/s
the count is above|try k -r 99999999999999999999/s
unknown unit "parsec"|try k -r 5/parsec
expected N/PERIOD|try k -r 5
the period is zero|try k -r 5/0s
invalid cost "0"|try k -r 5/s -c 0
invalid cost "1.5"|try k -r 5/s -c 1.5
invalid cost "-2"|try k -r 5/s -c -2
cost 6 can never be granted|try k -r 5/s -c 6
invalid burst "0"|try k -r 5/s -b 0
invalid duration "-1": it is negative|wait k -r 5/s -t -1
invalid duration "soon"|wait k -r 5/s -t soon
unknown unit "fortnight"|wait k -r 5/s -t 2fortnight
unknown algorithm "token_bucket"; did you mean "token-bucket"?|try k -r 5/s -a token_bucket
unknown command "fly"|fly k -r 5/s
no rate for "k": give -r N/PERIOD, e.g. -r 10/s, or define [limits.k] in|try k
a KEY is required; expected ratelimit try KEY [OPTIONS]|try -r 5/s
unknown option "--frobnicate"; see ratelimit try --help|try k -r 5/s --frobnicate
--rate: a value is missing; expected --rate N/PERIOD|try k -r
--timeout: a value is missing; expected --timeout DURATION|wait k -r 5/s -t
--cost: given more than once; expected --cost N once|try k -r 5/s -c 1 -c 2
--limited-exit-code: value abc not in range 0 to 255; expected --limited-exit-code N|-E abc try k -r 5/s
--limited-exit-code: value 300 not in range 0 to 255|try k -r 5/s -E 300
--db: a value is missing; expected --db PATH; see ratelimit --help|--db
CASES
  # Every message starts in lower case.
  expect_status 2 rl try
  expect_true "upper case in: $ERR" grep -qE '^ratelimit: [a-z-]' <<<"$ERR"
}

test_empty_and_oversized_keys() {
  expect_status 2 rl try "" -r 1/s
  expect_one_line
  expect_contains "$ERR" 'invalid key ""'
  expect_status 2 rl try "$(head -c 1025 /dev/zero | tr '\0' k)" -r 1/s
  expect_one_line
  expect_contains "$ERR" "at most 1024 bytes"
  expect_status 0 rl try "$(head -c 1024 /dev/zero | tr '\0' k)" -r 1/s
}

test_sql_in_a_key_is_just_a_key() {
  local key="x'); DROP TABLE keys; --"
  expect_status 0 rl try "$key" -r 1/min
  expect_status 1 rl try "$key" -r 1/min
  expect_status 0 rl try other -r 1/min
}

# Each process rebuilds the WAL index when it opens the database: the WAL must be truncated
# now and then, or it grows with every decision and every open and commit reads all of it.
test_the_database_is_in_wal_mode_from_its_creation() {
  on_store sqlite || return 0
  rl try k -r 1/min
  expect_eq wal "$(sqlite3 "$DB" 'PRAGMA journal_mode')" "journal mode"
  expect_eq 1380732244 "$(sqlite3 "$DB" 'PRAGMA application_id')" "application id"
  expect_eq 8 "$(sqlite3 "$DB" 'PRAGMA user_version')" "schema version"
}

test_a_new_rate_on_a_key_applies_at_the_next_call() {
  expect_status 0 rl try changed -r 1/min -a token-bucket
  expect_status 1 rl -q try changed -r 1/min -a token-bucket
  # A larger bucket: the new capacity counts from the key's state, not from a fresh start.
  expect_status 0 rl try changed -r 2/min -b 5
  expect_status 0 rl --json try changed -r 2/min -b 5
  expect_eq 5 "$(json_field "$OUT" burst)" "the new burst"
  # Back to a smaller limit: stricter at once.
  expect_status 1 rl -q try changed -r 1/min -a token-bucket
}

# Reservations queued on a key under a faster limit all count at a slower one: five waiters
# at 6/min hold the next 40 s, and a call at 1/min then waits five minutes, not two.
test_a_slower_limit_counts_every_reservation_queued_on_the_key() {
  local waiters=() i retry
  for i in 1 2 3 4 5; do
    rl -q wait queued -r 6/min -b 1 -a token-bucket &
    waiters+=($!)
  done
  wait_for_reservation queued 45000
  expect_status 1 rl --json try queued -r 1/min -b 1 -a token-bucket
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry: five units at 1/min" test "$retry" -gt 240000
  # The faster limit, remembered, holds them too: its next slot is still after them.
  expect_status 1 rl --json try queued -r 6/min -b 1 -a token-bucket
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry at 6/min: after the reservations" test "$retry" -gt 45000
  kill -9 "${waiters[@]}" 2>/dev/null
  wait "${waiters[@]}" 2>/dev/null || true
}

test_the_wal_stays_short() {
  on_store sqlite || return 0
  local i size
  for i in $(seq 300); do
    rl try "key$((i % 7))" -r 1000000/s || fail "try $i exited $?"
  done
  size=$(stat -c %s "$DB-wal")
  expect_true "WAL of $size bytes after 300 decisions, at most 600 000" test "$size" -le 600000
}

test_default_database_location() {
  on_store sqlite || return 0
  unset RATELIMIT_DB
  XDG_STATE_HOME="$TEST_DIR/state" expect_status 0 rl try k -r 1/s
  expect_true "database under XDG_STATE_HOME" test -s "$TEST_DIR/state/ratelimit/ratelimit.db"
  # HOME must exist: it is never created.
  mkdir "$TEST_DIR/home"
  env -u XDG_STATE_HOME HOME="$TEST_DIR/home" "$RATELIMIT" try k -r 1/s
  expect_true "database under HOME" test -s "$TEST_DIR/home/.local/state/ratelimit/ratelimit.db"
  RATELIMIT_DB="$TEST_DIR/env.db" expect_status 0 rl try k -r 1/s
  expect_true "database from RATELIMIT_DB" test -s "$TEST_DIR/env.db"
  expect_status 0 rl --db "$TEST_DIR/deep/er/flag.db" try k -r 1/s
  expect_true "database from --db, directories created" test -s "$TEST_DIR/deep/er/flag.db"
}

# Concurrency: 8 processes hammering one key for 3 s never exceed burst + rate * elapsed,
# and no call fails.
test_eight_processes_never_over_admit() {
  local deadline=$(($(now_ms) + 3000)) start
  start=$(now_ms)
  for p in 1 2 3 4 5 6 7 8; do
    (
      while [ "$(now_ms)" -lt $deadline ]; do
        rl try -q hot -r 5/s -b 5
        echo "$?" >>"statuses.$p"
      done
    ) &
  done
  wait
  local elapsed=$(($(now_ms) - start))
  local granted errors total
  granted=$(cat statuses.* | grep -c '^0$')
  errors=$(cat statuses.* | grep -vc '^[01]$')
  total=$(cat statuses.* | wc -l)
  local bound=$((5 + 5 * elapsed / 1000 + 1))
  echo "    $total calls, $granted granted in $elapsed ms (bound $bound)"
  expect_eq 0 "$errors" "calls that failed"
  expect_true "granted $granted <= $bound" test "$granted" -le "$bound"
  # The limit was really reached (5/s is low enough for the slow starts under the
  # sanitizers), and not starved either: callers that asked for twice what it allows got
  # most of it.
  expect_true "some calls limited ($total calls)" test "$total" -gt "$granted"
  if [ "$total" -ge $((2 * bound)) ]; then
    expect_true "granted $granted >= 12" test "$granted" -ge 12
  fi
}

# 10 waiters on 10/s with burst 1, started 40 ms apart, are granted in the order they
# reserved (a waiter's reservation time is when it finished less what it slept) and about
# 100 ms apart, never closer.
test_waiters_are_granted_in_arrival_order() {
  local start
  start=$(now_us)
  for i in 0 1 2 3 4 5 6 7 8 9; do
    (
      out=$(rl --json wait queue -r 10/s -b 1)
      finished=$((($(now_us) - start) / 1000))
      echo "$((finished - $(json_field "$out" waited_ms))) $finished $i" >>finished
    ) &
    sleep 0.04
  done
  wait
  expect_eq 10 "$(wc -l <finished)" "waiters granted"
  # In grant order, no waiter reserved clearly (100 ms, a slot: the jitter of timestamps
  # taken after separate processes exit, which sanitized processes stretch) after the one
  # granted next.
  local misordered
  misordered=$(sort -n -k2,2 finished |
    awk 'NR > 1 && previous > $1 + 100 {print "waiter " id " reserved at " previous \
      " ms, after waiter " $3 " at " $1 " ms, but was granted first"} {previous = $1; id = $3}')
  expect_eq "" "$misordered" "grant order against reservation order"
  local times
  times=$(sort -n -k2,2 finished | awk '{print $2}' | tr '\n' ' ')
  echo "    granted at (ms): $times"
  # Timestamps taken by separate processes jitter by tens of ms under load, so the spacing
  # is judged over all ten grants: 9 intervals of 100 ms, less two of those jitters (a
  # doubled rate would be 450 ms).
  local first previous
  first=${times%% *}
  previous=$(echo $times | awk '{print $NF}')
  local span=$((previous - first))
  expect_true "first to last grant $span ms, about 900" test $span -ge 700 -a $span -le 1500
}

test_wait_sleeps_until_the_slot() {
  local t0 t1 t3
  t0=$(now_ms)
  rl try slow -r 1/2s -b 1
  t1=$(now_ms)
  # The slot is 2 s after the try's decision, made between t0 and t1. Late by at most a
  # second: two process starts and exits, which a loaded machine and the sanitizers stretch.
  expect_status 0 rl --json wait slow -r 1/2s -b 1
  t3=$(now_ms)
  local waited
  waited=$(json_field "$OUT" waited_ms)
  expect_true "woke at $((t3 - t0)) ms, not before the slot" test $((t3 - t0)) -ge 2000
  expect_true "woke at $((t3 - t1)) ms after the try, at most 1 s late" \
    test $((t3 - t1)) -le 3000
  expect_true "waited_ms $waited <= 2000" test "$waited" -le 2000
}

test_wait_timeout_refuses_without_reserving() {
  rl try t -r 1/min
  local start
  start=$(now_ms)
  expect_status 1 rl --json wait t -r 1/min -t 2s
  # Not after the 2 s timeout, nor at the slot a minute away.
  expect_true "refused at once" test $(($(now_ms) - start)) -lt 1500
  expect_eq false "$(json_field "$OUT" allowed)"
  local retry
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry about a minute" test "$retry" -gt 58000 -a "$retry" -le 60000
  # Nothing was reserved: the next slot is still about a minute away, not two.
  expect_status 1 rl --json try t -r 1/min
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry still about a minute" test "$retry" -le 60000
  expect_status 0 rl wait t2 -r 1/min -t 0
}

test_a_wait_timeout_refusal_names_the_timeout() {
  rl try t -r 1/min
  expect_status 1 rl wait t -r 1/min -t 2s
  expect_one_line
  expect_contains "$ERR" 'ratelimit: "t" limited (sliding-log 1/min); next slot in '
  expect_contains "$ERR" ', beyond --timeout 2s'
}

# A leaky bucket refuses a reservation when its queue is full, however long the caller
# would wait: the message says so and names -b.
test_a_full_leaky_bucket_queue_says_so() {
  rl try q -r 1/min -a leaky-bucket -b 1
  "$RATELIMIT" wait q -r 1/min -a leaky-bucket -b 1 -q &
  local waiter=$!
  wait_for_reservation q 60000
  expect_status 1 rl wait q -r 1/min -a leaky-bucket -b 1
  expect_one_line
  expect_contains "$ERR" 'ratelimit: "q" limited (leaky-bucket 1/min, burst 1): its queue is full (-b sets its depth); room in '
  kill -KILL $waiter
  wait $waiter 2>/dev/null
}

# Reservations of 10 years each would push the schedule past what int64 nanoseconds hold
# after a few dozen: from the year 2116 on the slot is refused as too far away (exit 1),
# never wrapped round into a slot granted at once.
test_reservations_are_refused_past_the_latest_time_never_wrapped() {
  local i pids=() alive=0 refused=0 at_once=0 rc
  for i in $(seq 1 30); do
    "$RATELIMIT" wait far -r 1/3650d >"out.$i" 2>"err.$i" &
    pids+=($!)
  done
  sleep 4
  for i in $(seq 1 30); do
    if kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
      alive=$((alive + 1))
      continue
    fi
    wait "${pids[$((i - 1))]}"
    rc=$?
    if [ $rc = 0 ] && [ $at_once = 0 ]; then
      at_once=1 # the first to decide, granted at once
    elif [ $rc != 1 ]; then
      fail "wait $i ended with status $rc: $(cat "err.$i")"
    elif ! grep -q 'the next slot is too far away' "err.$i"; then
      fail "wait $i: $(cat "err.$i")"
    else
      refused=$((refused + 1))
    fi
  done
  kill -KILL "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  # 2026 + 8 x 10 years is the last slot before 2116: at most 9 sleep, the rest refused.
  expect_true "$alive waits sleeping, at most 10" test "$alive" -le 10
  expect_true "$refused waits refused as too far away, at least 20" test "$refused" -ge 20
}

# Starts `rl wait` in the background with SIGINT at its default disposition (a
# non-interactive shell's background jobs ignore it).
start_waiter() {
  /usr/bin/python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$RATELIMIT" "$@" &
  WAITER=$!
}

# SIGNAL to a `wait` (or with COMMAND run, to a `run` waiting to run it).
interrupted_wait_returns_its_slot() {
  local signal=$1 expected_status=$2 command=${3:-wait}
  rl try s -r 1/3s -b 1
  if [ "$command" = run ]; then
    start_waiter run s -r 1/3s -b 1 -- touch ran
  else
    start_waiter wait s -r 1/3s -b 1
  fi
  wait_for_reservation s 3000
  # Queued behind the waiter, the next free slot is more than 3 s away.
  expect_status 1 rl --json try s -r 1/3s -b 1
  local before after
  before=$(json_field "$OUT" retry_after_ms)
  kill -s "$signal" $WAITER
  wait $WAITER
  expect_eq "$expected_status" "$?" "status of the interrupted wait"
  expect_status 1 rl --json try s -r 1/3s -b 1
  after=$(json_field "$OUT" retry_after_ms)
  expect_true "before: $before ms > 3000" test "$before" -gt 3000
  expect_true "after: $after ms < 3000" test "$after" -lt 3000
  expect_true "the interrupted run ran its command" test ! -e ran
}

test_sigint_during_wait_returns_its_slot() { interrupted_wait_returns_its_slot INT 130; }

test_sigterm_during_wait_returns_its_slot() { interrupted_wait_returns_its_slot TERM 143; }

test_sigint_during_run_returns_its_slot() { interrupted_wait_returns_its_slot INT 130 run; }

test_sigterm_during_run_returns_its_slot() { interrupted_wait_returns_its_slot TERM 143 run; }

test_run_passes_status_and_output_through() {
  expect_status 7 rl run job -r 10/s -- sh -c 'echo out; echo err >&2; exit 7'
  expect_eq out "$OUT" "stdout"
  expect_eq err "$ERR" "stderr"
  expect_status 0 rl run job -r 10/s -- printf '%s|' a 'b c' -x
  expect_eq 'a|b c|-x|' "$OUT" "arguments passed as they are"
}

test_run_exit_statuses_for_a_command_that_cannot_run() {
  expect_status 127 rl run job -r 10/s -- ./no-such-command
  expect_one_line
  expect_contains "$ERR" 'cannot run "./no-such-command"'
  # Escaped as keys are: one line, no raw control characters.
  expect_status 127 rl run job -r 10/s -- $'no\nsuch\e[2J'
  expect_one_line
  expect_contains "$ERR" 'cannot run "no\nsuch\x1b[2J"'
  printf 'echo hi\n' >not-executable
  expect_status 126 rl run job -r 10/s -- ./not-executable
  expect_status 125 rl run job -r 10/s
  expect_contains "$ERR" "no command to run"
}

test_run_no_wait_does_not_run_when_limited() {
  rl try nw -r 1/min
  expect_status 1 rl run nw -r 1/min --no-wait -- touch ran
  expect_true "command not run" test ! -e ran
  expect_status 0 rl run nw2 -r 1/min --no-wait -- touch ran
  expect_true "command run" test -e ran
}

test_run_reports_the_time_it_waited_in_json() {
  expect_status 0 rl --json run rj -r 1/3s -b 1 --no-wait -- true
  expect_eq 0 "$(json_field "$OUT" waited_ms)" "waited_ms of run --no-wait"
  # The slot is 3 s after the first grant, less the time the process took to start (up to
  # a second and more for a sanitized one on a loaded machine).
  expect_status 0 rl --json run rj -r 1/3s -b 1 -- true
  local waited
  waited=$(json_field "$OUT" waited_ms)
  expect_true "waited_ms $waited, about 3000" test "$waited" -ge 1500 -a "$waited" -le 3500
  expect_status 0 rl --json try rj2 -r 4/s
  expect_eq "" "$(json_field "$OUT" waited_ms)" "waited_ms of try"
}

test_run_waits_for_its_slot() {
  rl try r -r 1/s -b 1
  local start
  start=$(now_ms)
  expect_status 0 rl run r -r 1/s -b 1 -- true
  local elapsed=$(($(now_ms) - start))
  # A second after the try's decision, less the time the try took to exit.
  expect_true "run waited $elapsed ms, about 1000" test $elapsed -ge 800 -a $elapsed -le 2500
}

checksum() { sha256sum "$1" | cut -d' ' -f1; }

expect_foreign_file_untouched() {
  local file=$1 why=$2 sum
  sum=$(checksum "$file")
  local expected
  for command in "try k -r 1/s" "wait k -r 1/s" "run k -r 1/s -- true"; do
    # run's own failures are 125, apart from the command's statuses.
    expected=3
    [ "${command%% *}" = run ] && expected=125
    # shellcheck disable=SC2086
    expect_status $expected rl --db "$file" $command || continue
    expect_one_line
    expect_contains "$ERR" "$why"
  done
  expect_eq "$sum" "$(checksum "$file")" "checksum of $file"
  expect_true "no journal beside $file" test ! -e "$file-wal" -a ! -e "$file-journal"
}

test_foreign_files_are_refused_and_unchanged() {
  printf 'hello\n' >text.txt
  expect_foreign_file_untouched text.txt "is not a ratelimit database"
  : >empty.db
  expect_foreign_file_untouched empty.db "it is empty"
  sqlite3 other.db "CREATE TABLE t (x); INSERT INTO t VALUES (42);"
  expect_foreign_file_untouched other.db "another application's SQLite database"
}

# An int64 as the 16 hex digits of its little-endian bytes, as the state codec stores it.
le64() {
  local value=$1 out="" byte i
  # printf -v: no process per byte, so that the test's times stay close to its `now` on a
  # loaded machine.
  for ((i = 0; i < 8; i++)); do
    printf -v byte '%02x' $(((value >> (8 * i)) & 255))
    out+=$byte
  done
  printf '%s' "$out"
}

test_a_version_1_database_is_upgraded_with_one_log_per_key() {
  on_store sqlite || return 0
  # Version 1 kept one sliding log per limit: two grants, logged by 2/10s and by 3/min (10 s,
  # so that slow process starts on a busy machine stay within it).
  local now second=10000000000 minute=60000000000
  now=$(date +%s%N)
  local limits
  limits="$(le64 2)$(le64 $second)$(le64 2)$(le64 "$now")$(le64 2)$(le64 0)"
  limits+="$(le64 3)$(le64 $minute)$(le64 3)$(le64 "$now")$(le64 2)$(le64 0)"
  sqlite3 "$DB" >/dev/null <<SQL
PRAGMA application_id = 1380732244;
PRAGMA user_version = 1;
PRAGMA journal_mode = WAL;
CREATE TABLE keys (id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE, algorithm TEXT NOT NULL,
  clock INTEGER NOT NULL, limits BLOB NOT NULL, fresh_at INTEGER NOT NULL DEFAULT 0);
CREATE INDEX keys_by_fresh_at ON keys (fresh_at);
CREATE TABLE grant_log (key_id INTEGER NOT NULL, period INTEGER NOT NULL,
  cumulative INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (key_id, period, cumulative))
  WITHOUT ROWID;
CREATE INDEX grant_log_by_time ON grant_log (key_id, period, at);
INSERT INTO keys VALUES (1, CAST('k' AS BLOB), 'sliding-log', $now, X'$limits', 0);
INSERT INTO grant_log VALUES (1, $second, 1, $((now - 1))), (1, $second, 2, $now),
  (1, $minute, 1, $((now - 1))), (1, $minute, 2, $now);
SQL
  expect_status 0 rl status
  expect_eq 8 "$(sqlite3 "$DB" 'PRAGMA user_version')" "schema version after the upgrade"
  # One log: each grant counts once for each limit that logged it, never less.
  expect_eq "4|4" "$(sqlite3 "$DB" 'SELECT count(*), max(cumulative) FROM grant_log')" "log"
  expect_eq "$minute" "$(sqlite3 "$DB" 'SELECT log_period FROM keys')" "log period"
  expect_status 1 rl try k -r 2/10s -a sliding-log
  expect_status 1 rl try k -r 4/min -a sliding-log
  expect_status 0 rl try other -r 1/s
}

test_a_version_2_database_gets_the_run_slots_table() {
  on_store sqlite || return 0
  rl try k -r 5/h
  sqlite3 "$DB" "DROP TABLE runs; PRAGMA user_version = 2; PRAGMA wal_checkpoint(TRUNCATE);" \
    >/dev/null
  expect_status 0 rl status k
  expect_eq 8 "$(sqlite3 "$DB" 'PRAGMA user_version')" "schema version after the upgrade"
  expect_eq 4 "$(json_field "$(rl --json status k)" remaining)" "the key's state kept"
  expect_status 0 rl run k -j 1 -- true
}

test_a_database_on_a_pseudo_file_system_names_the_real_cause() {
  on_store sqlite || return 0
  local db
  for db in /proc/x.db /sys/x.db; do
    expect_status 3 rl --db "$db" try k -r 1/s
    expect_one_line
    # What the kernel says of a new file there: no such file (/proc), or no permission (/sys).
    case $ERR in
    *"cannot create database \"$db\": no such file or directory"* | \
      *"cannot create database \"$db\": permission denied"*) ;;
    *) fail "not the real cause: $ERR" ;;
    esac
    expect_true "not a full disk: $ERR" test "${ERR#*disk is full}" = "$ERR"
  done
}

test_newer_schema_is_refused_and_unchanged() {
  on_store sqlite || return 0
  rl try k -r 1/s
  sqlite3 "$DB" "PRAGMA user_version = 9; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  expect_foreign_file_untouched "$DB" "schema version 9, newer than this ratelimit reads"
}

test_concurrent_first_use_creates_one_database() {
  on_store sqlite || return 0
  for p in 1 2 3 4 5 6; do
    rl try first -r 100/s >/dev/null 2>>errors &
  done
  wait
  expect_eq "" "$(cat errors)" "errors"
  expect_eq 1 "$(sqlite3 "$DB" 'SELECT count(*) FROM keys')" "keys"
  expect_eq "" "$(ls | grep '\.new-')" "scratch files left"
}

test_version_and_help() {
  expect_status 0 rl --version
  expect_contains "$OUT" "ratelimit "
  expect_contains "$OUT" "sqlite"
  expect_status 0 rl --help
  for command in try wait run pipe status reset gc simulate; do
    expect_contains "$OUT" "  $command " "--help"
  done
  for command in try wait run pipe status reset gc simulate; do
    expect_status 0 rl "$command" --help
    expect_contains "$OUT" "Example:"
  done
}

run_suite
