#!/usr/bin/env bash
# run -j N (at most N commands of a key at once) and run --until-exit (each command counted
# from its start to its exit), on both stores: the caps hold across processes, a dead holder
# frees its slot, waiters start in arrival order, and a strict API never answers 429.
. "$(dirname "$0")/lib.sh"

# A command that counts how many of its kind run at once, under an flock of its own, and
# keeps the most it saw in $TEST_DIR/most: ./counted SECONDS.
make_counted() {
  cat >counted <<'SH'
#!/bin/sh
exec 9>>"$COUNT_DIR/lock"
flock 9
now=$(($(cat "$COUNT_DIR/running" 2>/dev/null || echo 0) + 1))
echo $now >"$COUNT_DIR/running"
most=$(cat "$COUNT_DIR/most" 2>/dev/null || echo 0)
[ $now -gt $most ] && echo $now >"$COUNT_DIR/most"
echo start >>"$COUNT_DIR/log"
flock -u 9
sleep "$1"
flock 9
echo $(($(cat "$COUNT_DIR/running") - 1)) >"$COUNT_DIR/running"
flock -u 9
SH
  chmod +x counted
  export COUNT_DIR=$TEST_DIR
}

test_j_2_never_lets_3_run_at_once() {
  make_counted
  seq 12 | xargs -P 8 -I{} "$RATELIMIT" run k -j 2 -- ./counted 0.2 2>errors
  expect_eq "" "$(cat errors)" "errors"
  expect_eq 12 "$(wc -l <log)" "commands run"
  expect_eq 2 "$(cat most)" "most at once"
  expect_eq 0 "$(cat running)" "running at the end"
}

test_j_with_a_rate_keeps_both() {
  make_counted
  local started ended
  started=$(now_ms)
  seq 10 | xargs -P 6 -I{} "$RATELIMIT" run k -j 3 -r 5/s -- ./counted 0.3 2>errors
  ended=$(now_ms)
  expect_eq "" "$(cat errors)" "errors"
  expect_eq 10 "$(wc -l <log)" "commands run"
  expect_eq 3 "$(cat most)" "most at once (the rate alone would let 5 through)"
  # 5/s, a token bucket of 5: the last five a second after the first five.
  expect_true "10 commands at 5/s in at least 0.9 s, took $((ended - started)) ms" \
    test $((ended - started)) -ge 900
}

test_until_exit_counts_a_command_until_it_exits() {
  # 2/s from start to exit: the third starts a second after the first two exit, not a
  # second after they started.
  local started ended
  started=$(now_ms)
  rl run k -r 2/s --until-exit -- sh -c 'touch started.1; sleep 0.5' &
  rl run k -r 2/s --until-exit -- sh -c 'touch started.2; sleep 0.5' &
  wait_for_started 2
  expect_status 0 rl run k -r 2/s --until-exit -- true
  ended=$(now_ms)
  wait
  expect_true "the third waited for the exits plus 1 s: $((ended - started)) ms" \
    test $((ended - started)) -ge 1400
}

test_no_wait_refuses_at_once_when_every_slot_is_held() {
  start_holder
  expect_status 1 rl run k -j 1 --no-wait -- touch ran
  expect_one_line
  expect_contains "$ERR" "limited (at most 1 running at once)"
  expect_true "not run" test ! -e ran
  expect_status 1 rl --json run k -j 1 --no-wait -- touch ran
  expect_contains "$OUT" '"allowed":false'
  expect_contains "$OUT" '"retry_after_ms":null'
  kill $HOLDER
  wait $HOLDER
  expect_status 0 rl run k -j 1 --no-wait -- touch ran
  expect_true "run once free" test -e ran
}

# The store's wait wakes at --timeout: the loop's arithmetic is unit-tested on a virtual
# clock (test_cli_acquisition).
test_timeout_bounds_the_wait_for_a_slot() {
  start_holder
  local started ended
  started=$(now_ms)
  expect_status 1 rl run k -j 1 -t 0.5s -- touch ran
  ended=$(now_ms)
  expect_contains "$ERR" "beyond --timeout 0.5s"
  expect_true "gave up after about 0.5 s: $((ended - started)) ms" \
    test $((ended - started)) -ge 400 -a $((ended - started)) -lt 4000
  expect_true "not run" test ! -e ran
  kill -TERM $HOLDER
  wait $HOLDER
  # A known release beyond the timeout is refused at once.
  rl run u -r 1/30s --until-exit -- true
  started=$(now_ms)
  expect_status 1 rl run u -r 1/30s --until-exit -t 5s -- touch ran
  ended=$(now_ms)
  expect_contains "$ERR" "next slot in"
  # At once: not after waiting out the timeout (a loaded machine may take a while to start).
  expect_true "refused at once: $((ended - started)) ms" test $((ended - started)) -lt 4000
}

# start_holder ARGUMENTS...: `run k -j 1 ARGUMENTS -- sleep 30` in the background, once
# its command has started: its pid in $HOLDER and its command's in $CHILD.
start_holder() {
  rm -f child
  "$RATELIMIT" run k -j 1 "$@" -- sh -c 'echo $$ >child; exec sleep 30' &
  HOLDER=$!
  wait_for_file child
  CHILD=$(cat child)
  expect_eq "$HOLDER" "$(ps -o ppid= -p "$CHILD" | tr -d ' ')" "the command's parent"
}

# Whether COUNT runs of KEY, or more, wait for a slot, as `status` lists them.
runs_waiting() {
  [ "$("$RATELIMIT" status "$1" | grep -c ' waiting ')" -ge "$2" ]
}

# Waits (up to 10 s) until COUNT runs of KEY wait for a slot.
wait_for_waiters() {
  poll_for_10s runs_waiting "$1" "$2" && return 0
  fail "fewer than $2 runs of \"$1\" waiting after 10 s"
  return 1
}

# kill_holder_of_awaited_slot TRIES ARGUMENTS...: a holder (start_holder ARGUMENTS) and a
# waiter for its slot (`touch ran`); kills the holder and its command, waits at most TRIES
# times 20 ms for the waiter to run, and leaves in $TOOK the milliseconds since the kill.
# The waiter is reaped.
kill_holder_of_awaited_slot() {
  local tries=$1 waiter killed
  shift
  start_holder "$@"
  rl run k -j 1 "$@" -- touch ran &
  waiter=$!
  wait_for_waiters k 1
  expect_true "the waiter waits" test ! -e ran
  killed=$(now_ms)
  kill -9 $HOLDER $CHILD
  while [ ! -e ran ] && [ $tries -gt 0 ]; do
    sleep 0.02
    tries=$((tries - 1))
  done
  TOOK=$(($(now_ms) - killed))
  wait $waiter
}

test_a_killed_holder_frees_its_slot_within_a_second() {
  on_store sqlite || return 0
  kill_holder_of_awaited_slot 50
  expect_true "the waiter ran within a second of the kill" test -e ran
  expect_true "within a second: $TOOK ms" test $TOOK -lt 1000
}

test_a_killed_holder_frees_its_slot_when_its_lease_runs_out() {
  on_store redis || return 0
  # A lease renewed last up to 2/3 s before the kill: free 1.3 to 2 s after it.
  kill_holder_of_awaited_slot 200 --lease 2s
  expect_true "the waiter ran once the lease ran out" test -e ran
  expect_true "within the lease and a second: $TOOK ms" test $TOOK -lt 3000
}

test_a_running_holder_keeps_its_slot_past_its_lease() {
  on_store redis || return 0
  rm -f child
  "$RATELIMIT" run k -j 1 --lease 1s -- sh -c 'echo $$ >child; exec sleep 2.5' &
  wait_for_file child
  expect_status 1 rl run k -j 1 --lease 1s -t 1.5s -- touch ran
  expect_true "not run while the holder renews its lease" test ! -e ran
  wait
}

test_a_killed_supervisor_takes_its_command_with_it() {
  on_store sqlite || return 0
  start_holder
  kill -9 $HOLDER
  sleep 0.3
  # Gone, or a zombie that its new parent has not reaped yet.
  local state
  state=$(ps -o stat= -p "$CHILD")
  expect_true "the command went with ratelimit (state: $state)" test -z "$state" -o "${state#Z}" != "$state"
  expect_status 0 rl run k -j 1 --no-wait -- true
}

test_waiters_start_in_arrival_order() {
  start_holder
  local i
  for i in 1 2 3 4; do
    rl run k -j 1 -- sh -c "echo $i >>order; sleep 0.1" &
    wait_for_waiters k $i
  done
  kill $HOLDER
  wait
  expect_eq "1 2 3 4" "$(echo $(cat order))" "order"
}

test_signals_are_passed_to_the_command() {
  "$RATELIMIT" run k -j 1 -- sh -c 'trap "echo got TERM >>caught; exit 7" TERM; echo >ready; sleep 10 & wait' &
  local holder=$!
  wait_for_file ready
  kill -TERM $holder
  wait $holder
  expect_eq 7 $? "status: the command's"
  expect_eq "got TERM" "$(cat caught)" "the command got SIGTERM"
  rl run k -j 1 -- sh -c 'kill -KILL $$'
  expect_eq 137 $? "killed by signal 9: 128 + 9"
  expect_status 0 rl run k -j 1 --no-wait -- true
}

test_the_commands_status_and_failures() {
  expect_status 3 rl run k -j 2 -- sh -c 'exit 3'
  expect_status 127 rl run k -j 2 -- no-such-command-here
  expect_contains "$ERR" "cannot run \"no-such-command-here\": command not found"
  expect_status 0 rl run k -j 2 --no-wait -- true
}

test_the_command_inherits_no_descriptor_of_ratelimits() {
  local own
  own=$(sh -c 'ls /proc/$$/fd' | sort | tr '\n' ' ')
  expect_status 0 rl run k -j 1 -- sh -c 'ls /proc/$$/fd'
  expect_eq "$own" "$(sort <<<"$OUT" | tr '\n' ' ')" "descriptors under -j"
  expect_status 0 rl run u -r 5/s --until-exit -- sh -c 'ls /proc/$$/fd'
  expect_eq "$own" "$(sort <<<"$OUT" | tr '\n' ' ')" "descriptors under --until-exit"
}

test_usage_errors() {
  expect_status 125 rl run k -j 0 -- true
  expect_one_line
  expect_contains "$ERR" "invalid --concurrency \"0\""
  expect_status 125 rl run k -j 2 -c 3 -- true
  expect_contains "$ERR" "cost 3 is above --concurrency 2"
  expect_status 125 rl run k --until-exit -a token-bucket -r 1/s -- true
  expect_one_line
  expect_contains "$ERR" "--until-exit"
  expect_status 125 rl run k --until-exit -- true
  expect_contains "$ERR" "no rate"
  expect_status 0 rl run k --until-exit -a sliding-log -r 1/s -- true
}

test_status_shows_the_holders_and_reset_frees_them() {
  start_holder
  expect_status 0 rl status k
  expect_true "a line for the holder: $OUT" grep -Eq "^\"k\" +running +$HOLDER " <<<"$OUT"
  expect_status 0 rl --json status k
  expect_contains "$OUT" "\"pid\":$HOLDER"
  expect_status 1 rl run k -j 1 --no-wait -- true
  expect_status 0 rl reset k
  expect_status 0 rl run k -j 1 --no-wait -- true
  kill $HOLDER
  wait $HOLDER
}

# --- a strict API ---------------------------------------------------------------------------


# 40 curls through xargs -P 8, each delayed before it connects by 0 or 0.3 s (a start, a
# lookup, a handshake that vary); prints how many were answered 429.
curl_forty() {
  cat >call <<'SH'
#!/bin/sh
[ $(($1 % 2)) = 1 ] && sleep 0.3
exec curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$API_PORT/item/$1"
SH
  chmod +x call
  export API_PORT
  seq 40 | xargs -P 8 -I{} "$RATELIMIT" run api -r 5/s "$@" -- ./call {} >codes 2>errors
  grep -c 429 codes
}

test_a_strict_api_never_answers_429_with_until_exit() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  start_api arrivals --limit 5 --period 1 # 5 per second by arrival
  local refused
  refused=$(curl_forty --until-exit)
  stop_api
  expect_eq "" "$(cat errors)" "errors"
  expect_eq 40 "$(grep -c 200 arrivals)" "requests accepted"
  expect_eq 0 "$refused" "answers 429 with --until-exit"
}

test_a_strict_api_answers_429_to_grants_a_period_apart() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  start_api arrivals --limit 5 --period 1 # 5 per second by arrival
  local refused
  refused=$(curl_forty -a sliding-log)
  stop_api
  expect_eq 40 "$(wc -l <arrivals)" "requests"
  expect_true "some answers 429 without --until-exit (the test tests something): $refused" \
    test "$refused" -gt 0
}

run_suite
