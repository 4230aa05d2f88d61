#!/usr/bin/env bash
# Standard descriptors: a command started with 0, 1 or 2 closed (cron, daemons, `>&-`)
# never lets the database take one of them; a closed or full standard error changes
# nothing; a standard output that cannot be written is one line on stderr and status 4.
. "$(dirname "$0")/lib.sh"

# The database is whole and still answers.
expect_database_intact() {
  expect_status 0 rl --json status || return
  expect_contains "$OUT" '"key":' "status after: $*"
  expect_true "the SQLite header is intact after: $*" \
    sh -c "head -c 15 '$DB' | grep -q 'SQLite format 3'"
}

test_closed_stdout_never_writes_into_the_database() {
  on_store sqlite || return 0
  expect_status 0 rl try k -r 10/s || return
  rl --json try k -r 10/s >&-
  expect_eq 0 $? "status with stdout closed"
  expect_status 0 rl try k -r 10/s
  expect_database_intact "--json try with stdout closed"
}

test_closed_stderr_never_writes_into_the_database() {
  on_store sqlite || return 0
  expect_status 0 rl try d -r 1/min || return
  # The denial's message has nowhere to go.
  rl try d -r 1/min 2>&-
  expect_eq 1 $? "a denial with stderr closed"
  rl try k -r 10/s 2>&-
  expect_eq 0 $? "a grant with stderr closed"
  expect_status 0 rl try k -r 10/s
  expect_database_intact "a denial with stderr closed"
}

test_closed_stdin_is_never_the_database() {
  on_store sqlite || return 0
  expect_status 0 rl try p -r 100/s || return
  # pipe reads standard input: with it closed, it reads an empty input, not the database.
  rl pipe p -r 100/s <&- >out
  expect_eq 0 $? "pipe with stdin closed"
  expect_eq 0 "$(wc -c <out)" "bytes pipe copied"
  expect_database_intact "pipe with stdin closed"
}

test_all_three_closed() {
  on_store sqlite || return 0
  expect_status 0 rl try k -r 10/s || return
  rl --json try k -r 10/s <&- >&- 2>&-
  expect_eq 0 $? "try with 0, 1 and 2 closed"
  rl try d -r 1/min <&- >&- 2>&-
  rl try d -r 1/min <&- >&- 2>&-
  expect_eq 1 $? "a denial with 0, 1 and 2 closed"
  expect_database_intact "0, 1 and 2 closed"
}

test_a_closed_descriptor_on_every_store() {
  # Whatever the store, a closed stream is no error and changes no decision.
  rl try c -r 1/min >&- 2>&-
  expect_eq 0 $? "first try"
  rl try c -r 1/min >&- 2>&-
  expect_eq 1 $? "second try"
}

test_a_full_stderr_does_not_abort() {
  [ -w /dev/full ] || { skip "no /dev/full"; return 0; }
  expect_status 0 rl try d -r 1/min || return
  rl try d -r 1/min 2>/dev/full
  expect_eq 1 $? "a denial with stderr full"
  rl --on-store-error=allow --db /proc/no/such.db try a -r 1/min 2>/dev/full
  expect_eq 0 $? "a fail-open grant whose warning cannot be written"
  rl status unknown-key 2>/dev/full
  expect_eq 1 $? "status of an unknown key with stderr full"
  rl try d -r bad 2>/dev/full
  expect_eq 2 $? "a usage error with stderr full"
}

test_a_stderr_pipe_without_reader_does_not_change_the_status() {
  expect_status 0 rl try d -r 1/min || return
  # The reader (true) is gone by the time the denial is written: SIGPIPE would make it 141.
  { sleep 0.5; rl try d -r 1/min 2>&1 >/dev/null; echo $? >status; } | true
  expect_eq 1 "$(cat status)" "a denial whose message has no reader"
  { sleep 0.5; rl try k -r 1/min 2>&1 >/dev/null; echo $? >status; } | true
  expect_eq 0 "$(cat status)" "a grant with stderr's reader gone"
}

# expect_output_error STATUS ARGS...: STATUS, one line on stderr naming standard output.
expect_output_error() {
  local expected=$1
  shift
  "$RATELIMIT" "$@" >/dev/full 2>"$TEST_DIR/stderr"
  STATUS=$?
  ERR=$(cat "$TEST_DIR/stderr")
  expect_eq "$expected" "$STATUS" "status of: $* >/dev/full (stderr: $ERR)" || return
  expect_one_line || return
  expect_contains "$ERR" "cannot write standard output" "stderr of: $*"
}

test_a_full_stdout_is_status_4() {
  [ -w /dev/full ] || { skip "no /dev/full"; return 0; }
  expect_output_error 4 simulate --profile steady -r 5/s
  expect_output_error 4 simulate --profile poisson -r 5/s --format csv
  expect_output_error 4 --help
  expect_output_error 4 try --help
  expect_output_error 4 --version
  expect_output_error 4 --json try k -r 10/h
  expect_output_error 4 --json wait k -r 10/h
  # The decisions were made all the same: the slots are taken.
  expect_status 0 rl --json status k
  expect_eq 8 "$(json_field "$OUT" remaining)" "remaining after two grants"
  expect_output_error 4 --json status
  expect_output_error 4 --json gc
  expect_output_error 4 --json reset k
}

test_a_full_stdout_does_not_hide_a_denial() {
  [ -w /dev/full ] || { skip "no /dev/full"; return 0; }
  expect_status 0 rl try d -r 1/min || return
  rl --json try d -r 1/min >/dev/full 2>"$TEST_DIR/stderr"
  STATUS=$?
  expect_true "a denial whose report is lost is not a grant (status $STATUS)" \
    test "$STATUS" != 0
}

test_pipe_into_a_full_stdout_is_not_a_usage_error() {
  [ -w /dev/full ] || { skip "no /dev/full"; return 0; }
  seq 3 >input
  rl pipe p -r 1000/s <input >/dev/full 2>"$TEST_DIR/stderr"
  expect_eq 4 $? "pipe >/dev/full"
  ERR=$(cat "$TEST_DIR/stderr")
  expect_one_line
  expect_contains "$ERR" "cannot write standard output"
  rl pipe -r 1000/s <input >/dev/full 2>/dev/null
  expect_eq 4 $? "pipe without a key >/dev/full"
}

test_run_with_a_full_stdout_does_not_run_the_command() {
  [ -w /dev/full ] || { skip "no /dev/full"; return 0; }
  rl run --json k -r 10/s -- touch ran >/dev/full 2>"$TEST_DIR/stderr"
  expect_eq 125 $? "run --json >/dev/full"
  expect_true "the command did not run" test ! -e ran
  ERR=$(cat "$TEST_DIR/stderr")
  expect_one_line
  # Without --json, ratelimit writes nothing there: what the command makes of it is its own.
  rl run k -r 10/s -- sh -c 'echo hi; touch ran' >/dev/full 2>/dev/null
  expect_eq 0 $? "run >/dev/full without --json"
  expect_true "the command ran" test -e ran
}

run_suite
