#!/usr/bin/env bash
# pipe: records byte for byte, pacing, shared keys, --timeout, a closed reader, signals.
. "$(dirname "$0")/lib.sh"

PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3

# Milliseconds elapsed while running a command; its status is kept in $STATUS.
time_ms() {
  local started
  started=$(now_ms)
  "$@"
  STATUS=$?
  ELAPSED=$(($(now_ms) - started))
}

test_lines_pass_unchanged_byte_for_byte() {
  # Random bytes hold newlines, NULs and everything else; a line longer than the read
  # buffer; CRLF; empty lines; and a last line without a newline.
  head -c 300000 /dev/urandom >in
  printf 'crlf\r\n\n\nlast without newline' >>in
  head -c 700000 /dev/zero | tr '\0' x >>in
  rl pipe -r 1000000/s <in >out
  expect_eq 0 "$?" "status"
  expect_true "output differs from input (cmp in out)" cmp -s in out
}

test_null_records_pass_unchanged_byte_for_byte() {
  head -c 300000 /dev/urandom >in
  printf 'a\nb\0\0tail' >>in
  rl pipe -0 -r 1000000/s <in >out
  expect_eq 0 "$?" "status"
  expect_true "output differs from input (cmp in out)" cmp -s in out
}

test_every_algorithm_passes_records_unchanged() {
  seq 20 >in
  local algorithm
  for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
    expect_status 0 rl pipe -a "$algorithm" -r 1000/s <in
    expect_eq "$(cat in)" "$OUT" "output of $algorithm"
  done
}

# With one slot and no waiting (-t 0), exactly the first record passes: what a record is
# shows in what gets through.
test_records_end_in_newline_or_with_null_in_nul() {
  printf 'a\nb\0c\0' >in
  expect_status 1 rl pipe -r 1/min -t 0 -q <in
  expect_eq a "$OUT" "first newline record"
  rl pipe -0 -r 1/min -t 0 -q <in >out
  expect_eq 1 "$?" "status with -0"
  printf 'a\nb\0' >expected
  expect_true "first NUL record: $(od -c out)" cmp -s expected out
}

test_last_record_without_terminator_passes_and_takes_a_slot() {
  expect_status 0 rl pipe -r 10/s < <(printf 'one\ntwo')
  expect_eq "$(printf 'one\ntwo')" "$OUT"
  expect_eq 7 "$(printf 'one\ntwo' | rl pipe -r 10/s | wc -c)" "bytes"
  # The unterminated record needs a slot like any other.
  expect_status 1 rl pipe -r 1/min -t 0 < <(printf 'one\ntwo')
  expect_eq one "$OUT"
  expect_contains "$ERR" "for record 2"
}

test_empty_input_exits_0() {
  expect_status 0 rl pipe -r 1/s </dev/null
  expect_eq "" "$OUT"
}

test_records_are_paced() {
  # 10/s with a burst of 1: one record at once, then one every 100 ms.
  seq 8 >in
  time_ms rl pipe -r 10/s -b 1 <in >out
  expect_eq 0 "$STATUS" "status"
  expect_eq "$(seq 8)" "$(cat out)" "output"
  expect_true "8 records at 10/s took $ELAPSED ms, expected about 700" \
    test "$ELAPSED" -ge 650 -a "$ELAPSED" -lt 3000
  # The burst goes at once: 8 records with a burst of 8 (paced, they would take 3.5 s).
  time_ms rl pipe -r 8/4s <in >out
  expect_true "a burst of 8 took $ELAPSED ms" test "$ELAPSED" -lt 2000
}

test_each_record_is_written_when_released_not_at_exit() {
  # The producer stays open for 3 s after its first line; the reader must get that line
  # long before.
  local started first
  started=$(now_ms)
  first=$( (
    echo first
    sleep 3
    echo second
  ) | rl pipe -r 100/s | (
    read -r line
    echo "$line $(now_ms)"
  ))
  expect_eq first "${first% *}" "first line"
  expect_true "first line after $((${first#* } - started)) ms" \
    test $((${first#* } - started)) -lt 2000
}

# Runs COMMAND... with its output read as it comes, by a reader started before it, and
# prints the records per read(2) after the first read.
records_per_read() {
  "$PYTHON" -c '
import os, subprocess, sys
command = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
out = command.stdout.fileno()
reads = records = 0
first = True
while True:
    chunk = os.read(out, 1 << 20)
    if not chunk:
        break
    if not first:
        reads += 1
        records += chunk.count(b"\n")
    first = False
command.wait()
print(round(records / max(reads, 1), 1))' "$@"
}

test_records_due_within_a_millisecond_share_one_wake_up() {
  # At 10 000/s a record falls due every 100 µs: with a burst that allows it, the ones due
  # within a millisecond go out together, in one write, not one write each.
  seq 2100 >in
  local per_read
  per_read=$(records_per_read "$RATELIMIT" pipe -r 10000/s -b 100 <in)
  expect_true "$per_read records per read at 10 000/s with a burst of 100, expected about 10" \
    "$PYTHON" -c "import sys; sys.exit(not 4 <= $per_read <= 101)"
  # Never more than the limit allows: 2100 records, 100 at once, take 0.2 s.
  time_ms rl pipe -r 10000/s -b 100 <in >out
  expect_eq "$(seq 2100)" "$(cat out)" "output"
  expect_true "2100 records at 10 000/s, burst 100, took $ELAPSED ms" test "$ELAPSED" -ge 195
}

test_several_rates_all_apply() {
  seq 10 >in
  expect_status 1 rl pipe -r 1000/s -r 3/min -t 0 -q <in
  expect_eq "$(seq 3)" "$OUT" "records through 3/min"
}

test_timeout_stops_before_a_record_without_a_slot() {
  seq 5 >in
  time_ms expect_status 1 rl pipe -r 1/min -t 0.2s <in
  expect_eq 1 "$OUT" "records written"
  expect_one_line
  expect_contains "$ERR" "ratelimit: pipe: no slot within 0.2s for record 2 (sliding-log 1/min"
  expect_true "refused at once, not after $ELAPSED ms" test "$ELAPSED" -lt 1500
  # -E sets the status, -q the message.
  expect_status 9 rl pipe -r 1/min -t 0 -E 9 -q <in
  expect_eq "" "$ERR" "stderr with -q"
  # A slot within the timeout is waited for.
  expect_status 0 rl pipe -r 10/s -b 1 -t 1s <in
  expect_eq "$(seq 5)" "$OUT"
}

test_keyed_pipes_share_the_key_with_other_commands() {
  seq 5 >in
  expect_status 1 rl pipe shared -r 3/min -t 0 -q <in
  expect_eq "$(seq 3)" "$OUT" "first pipe"
  expect_status 1 rl pipe shared -r 3/min -t 0 -q <in
  expect_eq "" "$OUT" "second pipe: the key is used up"
  expect_status 1 rl try shared -r 3/min
  expect_status 0 rl try other -r 3/min
}

test_two_keyed_pipes_running_at_once_share_one_limit() {
  # 2 × 6 records at 10/s, burst 1: about 1.1 s together, 0.5 s each on its own.
  seq 6 >in
  local started elapsed
  started=$(now_ms)
  rl pipe k -r 10/s -b 1 <in >out1 &
  local first=$!
  rl pipe k -r 10/s -b 1 <in >out2
  local second_status=$?
  wait $first
  local first_status=$?
  elapsed=$(($(now_ms) - started))
  expect_eq 0 "$first_status" "first pipe"
  expect_eq 0 "$second_status" "second pipe"
  expect_eq "$(seq 6)" "$(cat out1)" "first output"
  expect_eq "$(seq 6)" "$(cat out2)" "second output"
  expect_true "12 records at 10/s took $elapsed ms, expected about 1100" \
    test "$elapsed" -ge 1000 -a "$elapsed" -lt 5000
}

test_cost_takes_that_many_units_per_record() {
  seq 10 >in
  expect_status 1 rl pipe -r 10/min -c 3 -t 0 -q <in
  expect_eq "$(seq 3)" "$OUT" "3 records of cost 3 within 10"
  expect_status 1 rl pipe costly -r 10/min -c 3 -t 0 -q <in
  expect_eq "$(seq 3)" "$OUT" "the same on a key"
  expect_status 0 rl try costly -r 10/min
  expect_status 1 rl try costly -r 10/min
  expect_status 2 rl pipe -r 10/min -c 11 <in
  expect_contains "$ERR" "can never be granted"
}

test_pipe_without_key_opens_no_database() {
  on_store sqlite || return 0
  expect_status 0 rl --db nowhere/x.db pipe -r 1000/s <<<record
  expect_eq record "$OUT"
  expect_true "a database was created" test ! -e nowhere
}

test_keyed_pipe_sleeps_without_holding_the_lock() {
  on_store sqlite || return 0
  # 4 records at 2/s, burst 1: the pipe sleeps 1.5 s in all, between short decisions. A
  # pipe that held the lock through its 0.5 s sleeps would make these decisions time out.
  seq 4 | rl pipe k -r 2/s -b 1 >out &
  local pipe=$! i
  sleep 0.2
  for i in 1 2 3 4 5; do
    expect_status 0 rl --lock-timeout 0.2s try "other-$i" -r 1/s || break
    sleep 0.2
  done
  wait $pipe
  expect_eq "$(seq 4)" "$(cat out)" "the pipe's output"
}

test_closed_reader_while_waiting_for_input_ends_the_pipe() {
  # No input arrives for 3 s and the reader goes away: the pipe notices at once, rather
  # than at its next record.
  local started
  started=$(now_ms)
  { sleep 3; echo late; } | { rl pipe -r 10/s 2>err; echo "$? $(now_ms)" >ended; } | true
  local status ended
  read -r status ended <ended
  expect_eq 141 "$status" "status"
  expect_eq "" "$(cat err)" "stderr"
  expect_true "the pipe ended $((ended - started)) ms after its reader, not at the input" \
    [ $((ended - started)) -lt 2000 ]
}

test_keyed_pipe_honours_the_key_algorithm() {
  # A day's window: the key is not fresh again (free to change algorithm) during the test.
  ensure_window_margin 86400 10
  rl try k -r 5/d -a fixed-window
  expect_status 2 rl pipe k -r 5/d -a token-bucket <<<record
  expect_one_line
  expect_contains "$ERR" 'key "k" is limited by fixed-window, not token-bucket'
  # Without -a the key's own algorithm paces the records: 1 granted, 3 left of 5.
  expect_status 0 rl pipe k -r 5/d <<<$'a\nb\nc'
  expect_eq $'a\nb\nc' "$OUT" "records"
  expect_status 0 rl --json status k
  expect_contains "$OUT" '"algorithm":"fixed-window"' "status"
  expect_contains "$OUT" '"remaining":1' "status"
}

test_closed_reader_ends_quietly_with_sigpipe_status() {
  seq 1000000 >big
  rl pipe -r 1000/s <big 2>err | head -1 >out
  local status=${PIPESTATUS[0]}
  expect_eq 141 "$status" "status after the reader closed"
  expect_eq 1 "$(cat out)" "what the reader got"
  expect_eq "" "$(cat err)" "stderr"
  # The same with SIGPIPE ignored by the parent: the status says it, still no message.
  "$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$RATELIMIT" pipe -r 1000/s <big 2>err | head -1 >/dev/null
  status=${PIPESTATUS[0]}
  expect_eq 141 "$status" "status with SIGPIPE ignored"
  expect_eq "" "$(cat err)" "stderr with SIGPIPE ignored"
}

test_closed_reader_during_a_wait_ends_it_and_returns_the_slot() {
  seq 10 >in
  local started elapsed
  started=$(now_ms)
  # Two records at once, the third a minute away: the reader leaves after the first.
  rl pipe k -r 1/min -b 2 <in 2>err | head -1 >out
  local status=${PIPESTATUS[0]}
  elapsed=$(($(now_ms) - started))
  expect_eq 141 "$status" "status"
  expect_eq "" "$(cat err)" "stderr"
  expect_true "noticed at once, not after $elapsed ms" test "$elapsed" -lt 5000
  # Two grants stand; the reservation of the third was given back.
  expect_status 1 rl --json try k -r 1/min -b 2
  local retry
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry: the slot was returned" test "$retry" -le 60000
}

# Starts `rl ARGS < in > out` in the background with SIGINT at its default disposition.
start_pipe() {
  "$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$RATELIMIT" "$@" <in >out 2>err &
  PIPER=$!
}

interrupted_pipe_returns_its_slot() {
  local signal=$1 expected_status=$2
  seq 10 >in
  start_pipe pipe k -r 1/min -b 2
  local tries=0
  while [ "$(wc -l <out)" -lt 2 ] && [ $tries -lt 100 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
  # The third record's slot is reserved: the next one is more than a minute away.
  wait_for_reservation k 60000
  kill -s "$signal" $PIPER
  wait $PIPER
  expect_eq "$expected_status" "$?" "status of the interrupted pipe"
  expect_eq "$(seq 2)" "$(cat out)" "records written before"
  expect_eq "" "$(cat err)" "stderr"
  expect_status 1 rl --json try k -r 1/min -b 2
  local retry
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry: the slot was returned" test "$retry" -le 60000
}

test_sigint_during_a_wait_returns_the_slot() { interrupted_pipe_returns_its_slot INT 130; }

test_sigterm_during_a_wait_returns_the_slot() { interrupted_pipe_returns_its_slot TERM 143; }

test_sigterm_during_a_wait_without_key_ends_the_pipe() {
  seq 10 >in
  start_pipe pipe -r 1/min -b 2
  local tries=0
  while [ "$(wc -l <out)" -lt 2 ] && [ $tries -lt 100 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
  sleep 0.3
  kill -TERM $PIPER
  wait $PIPER
  expect_eq 143 "$?" "status of the interrupted pipe"
  expect_eq "$(seq 2)" "$(cat out)" "records written before"
  expect_eq "" "$(cat err)" "stderr"
}

test_sigterm_while_reading_ends_the_pipe() {
  # Blocked on an idle producer, the pipe ends on SIGTERM like any filter.
  mkfifo fifo
  rl pipe -r 10/s <fifo >out 2>err &
  local piper=$!
  exec 7>fifo
  echo one >&7
  sleep 0.3
  kill -TERM $piper
  wait $piper
  local status=$?
  exec 7>&-
  expect_eq 143 "$status" "status"
  expect_eq one "$(cat out)" "output"
}

test_bad_usage_exits_2() {
  expect_status 2 rl --json pipe -r 1/s </dev/null
  expect_one_line
  expect_contains "$ERR" "--json does not apply to pipe"
  expect_status 2 rl pipe </dev/null
  expect_contains "$ERR" "no rate given; expected -r N/PERIOD"
  expect_status 2 rl pipe "" -r 1/s </dev/null
  expect_contains "$ERR" 'invalid key ""'
  expect_status 2 rl pipe -r 1/s -t soon </dev/null
  expect_contains "$ERR" 'invalid duration "soon"'
}

test_unreadable_input_exits_2_with_a_message() {
  expect_status 2 rl pipe -r 1/s <.
  expect_one_line
  expect_contains "$ERR" "ratelimit: pipe: cannot read standard input: Is a directory"
}

run_suite
