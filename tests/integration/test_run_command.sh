#!/usr/bin/env bash
# run as a wrapper: its options end at the command, as env's, nice's and timeout's do, and
# its own failures exit 125, apart from the command's statuses.
. "$(dirname "$0")/lib.sh"

remaining() {
  expect_status 0 rl --json status "$1" >/dev/null
  json_field "$OUT" remaining
}

test_the_commands_options_are_the_commands() {
  printf 'root\n' >passwd
  expect_status 0 rl run g -r 10/h grep -q root passwd || return
  expect_eq "" "$OUT" "grep -q prints nothing"
  expect_status 0 rl run e -r 10/h echo -c 3 hi
  expect_eq "-c 3 hi" "$OUT" "echo's arguments"
  expect_eq 9 "$(remaining e)" "remaining: the -c 3 was echo's, not a cost of 3"
  expect_status 0 rl run j -r 10/h printf '%s\n' --json -q --db x -E 5
  expect_eq "--json -q --db x -E 5" "$(echo $OUT)" "global options after the command are its own"
  expect_status 3 rl run s -r 10/h sh -c 'exit 3'
}

test_options_before_the_command_are_runs() {
  expect_status 0 rl run k -r 10/h -c 2 echo hi || return
  expect_eq hi "$OUT" "output"
  expect_eq 8 "$(remaining k)" "remaining after a cost of 2"
  expect_status 0 rl run -r 10/h -c 3 k2 echo hi
  expect_eq hi "$OUT" "options before KEY"
  expect_eq 7 "$(remaining k2)" "remaining after a cost of 3"
  expect_status 0 rl run k3 --json -r 10/h echo hi
  expect_contains "$OUT" '"allowed":true' "--json after KEY"
  expect_status 0 rl run k4 -r10/h -c4 --no-wait echo hi
  expect_eq 6 "$(remaining k4)" "options with attached values"
  expect_status 0 rl run k5 -r 10/h --cost=5 echo hi
  expect_eq 5 "$(remaining k5)" "--cost=5"
}

test_double_dash_still_ends_the_options() {
  expect_status 0 rl run k -r 10/h -- echo -c 3 || return
  expect_eq "-c 3" "$OUT" "after --"
  expect_status 0 rl run k -r 10/h echo -- x
  expect_eq "-- x" "$OUT" "a -- of the command's"
  expect_eq 127 "$(rl run k -r 10/h -- --no-such-command 2>/dev/null; echo $?)" \
    "a command named like an option, after --"
}

test_an_unknown_option_before_the_command_is_an_error() {
  expect_status 125 rl run k -r 10/h --bogus echo hi || return
  expect_one_line
  expect_contains "$ERR" "--bogus"
  expect_eq "" "$OUT" "nothing run"
}

test_runs_own_failures_are_125() {
  expect_status 125 rl run k -r 10/h || return
  expect_contains "$ERR" "no command to run"
  expect_status 125 rl run k -r bad -- touch ran
  expect_status 125 rl run -r 10/h -- true
  expect_status 125 rl run k -r 10/h -c 0 -- touch ran
  expect_status 125 rl run k -r 10/h --timeout never -- touch ran
  expect_true "nothing ran" test ! -e ran
  on_store sqlite || return 0
  printf 'not a database' >foreign.db
  expect_status 125 rl --db foreign.db run k -r 10/h -- touch ran
  expect_one_line
  expect_true "nothing ran" test ! -e ran
  expect_status 0 rl run c -r 10/h -a token-bucket -- true
  expect_status 125 rl run c -r 10/h -a fixed-window -- touch ran
  expect_true "nothing ran" test ! -e ran
  # Not under run: the documented statuses.
  expect_status 2 rl try k -r bad
  expect_status 3 rl --db foreign.db try k -r 10/h
}

test_limited_stays_1_or_E_under_run() {
  expect_status 0 rl run l -r 1/h --no-wait -- true || return
  expect_status 1 rl run l -r 1/h --no-wait -- touch ran
  expect_status 2 rl run l -r 1/h --no-wait -E 2 -- touch ran
  expect_status 3 rl run l -r 1/h --no-wait -E 3 -- touch ran
  expect_status 1 rl run l -r 1/h -t 1s -- touch ran
  expect_true "nothing ran" test ! -e ran
  expect_status 0 rl run --help
  expect_contains "$OUT" "COMMAND"
}

run_suite
