#!/usr/bin/env bash
# The live countdown of wait and run: shown on a terminal, redrawn while sleeping, erased
# before they exit or execute the command; absent through a pipe, in a file, with -q.
. "$(dirname "$0")/lib.sh"

# in_terminal COMMAND...: runs COMMAND with its output on a pseudo-terminal (script(1));
# the bytes the terminal received go to $OUT, the status to $STATUS.
in_terminal() {
  local command
  command=$(printf '%q ' "$@")
  OUT=$(TERM=xterm script -qfec "$command" /dev/null </dev/null)
  STATUS=$?
}

ESC=$'\e'
ERASE=$'\r\e[K'

# What the terminal received after the last drawing of the countdown for "api".
after_last_drawing() {
  local drawing="for \"api\"${ESC}[K"
  printf '%s' "${OUT##*"$drawing"}"
}

# The number of times the countdown was drawn.
draws() { grep -o 'waiting [0-9.hms]* for ' <<<"$OUT" | wc -l; }

test_wait_shows_a_live_countdown_on_a_terminal() {
  rl try api -r 1/1.5s
  in_terminal "$RATELIMIT" wait api -r 1/1.5s
  expect_eq 0 "$STATUS" "status"
  expect_contains "$OUT" 'for "api"' "terminal output"
  expect_contains "$OUT" "${ERASE}" "terminal output"
  # Redrawn a few times a second: at least 5 times in about 1.5 s, with falling values.
  local count
  count=$(draws)
  expect_true "drawn $count times" test "$count" -ge 5
  local first last
  first=$(grep -o 'waiting [0-9.]*s' <<<"$OUT" | head -n 1 | tr -dc 0-9)
  last=$(grep -o 'waiting [0-9.]*s' <<<"$OUT" | tail -n 1 | tr -dc 0-9)
  expect_true "countdown from $first to $last tenths" test "$first" -gt "$last"
  expect_true "starts near 1.5s: $first tenths" test "$first" -le 15 -a "$first" -ge 10
}

test_wait_erases_the_countdown_before_it_exits() {
  rl try api -r 1/s
  in_terminal "$RATELIMIT" wait api -r 1/s
  expect_eq 0 "$STATUS" "status"
  expect_contains "$OUT" "waiting" "terminal output"
  # Nothing after the last drawing but the erasure.
  expect_eq "$ERASE" "$(after_last_drawing)" "what follows the last drawing"
}

test_run_erases_the_countdown_before_the_command() {
  rl try api -r 1/s
  in_terminal "$RATELIMIT" run api -r 1/s -- echo the-command-ran
  expect_eq 0 "$STATUS" "status"
  expect_contains "$OUT" "waiting" "terminal output"
  expect_contains "$(after_last_drawing)" "${ERASE}the-command-ran" "after the last drawing"
}

test_an_interrupted_wait_erases_the_countdown() {
  rl try api -r 1/5s
  in_terminal timeout --foreground -s TERM 0.6 "$RATELIMIT" wait api -r 1/5s
  expect_eq 124 "$STATUS" "status of timeout(1)"
  expect_contains "$OUT" "waiting" "terminal output"
  expect_eq "$ERASE" "$(after_last_drawing)" "what follows the last drawing"
}

test_the_countdown_leaves_the_sleep_exact() {
  rl try api -r 1/2s
  in_terminal "$RATELIMIT" --json wait api -r 1/2s
  expect_eq 0 "$STATUS" "status"
  local waited
  waited=$(json_field "$OUT" waited_ms | tr -dc 0-9)
  # The slot is 2 s after the try, less the time the try and the terminal took to start
  # (sanitized processes on a busy machine take hundreds of milliseconds), and the
  # countdown's redrawing must not make the sleep late.
  expect_true "waited_ms $waited in [1000, 2150]" test "$waited" -ge 1000 -a "$waited" -le 2150
}

test_the_countdown_fits_the_terminal_width() {
  local key
  key=$(printf 'k%.0s' {1..100})
  rl try "$key" -r 1/s
  in_terminal sh -c "stty cols 40 && exec \"\$0\" wait \"\$1\" -r 1/s" "$RATELIMIT" "$key"
  expect_eq 0 "$STATUS" "status"
  local longest
  longest=$(tr '\r' '\n' <<<"$OUT" | grep -o 'waiting.*' | sed "s/$ESC\[K//g" |
    awk '{ if (length($0) > max) max = length($0) } END { print max + 0 }')
  expect_true "longest drawing $longest characters, at most 39" test "$longest" -ge 20 -a "$longest" -le 39
}

test_no_countdown_when_stderr_is_not_a_terminal() {
  rl try api -r 1/s
  OUT=$(rl --json wait api -r 1/s 2>&1 | cat)
  expect_true "a real wait: $OUT" test "$(json_field "$OUT" waited_ms | tr -dc 0-9)" -ge 500
  case $OUT in *waiting* | *"$ESC"*) fail "countdown through a pipe: '$OUT'" ;; esac
  # Standard output on the terminal, standard error in a file: nothing in the file.
  rl try other -r 1/s
  in_terminal sh -c "exec \"\$0\" wait other -r 1/s 2>\"\$1\"" "$RATELIMIT" "$TEST_DIR/stderr-file"
  expect_eq 0 "$STATUS" "status"
  expect_eq "" "$(cat "$TEST_DIR/stderr-file")" "stderr in a file"
  case $OUT in *waiting*) fail "countdown on stdout: '$OUT'" ;; esac
}

test_no_countdown_in_a_background_job() {
  rl try api -r 1/s
  # With job control, the background job gets a process group of its own.
  # shellcheck disable=SC2016 # expanded by the inner bash
  in_terminal bash -c 'set -m; "$0" wait api -r 1/s & wait $!' "$RATELIMIT"
  expect_eq 0 "$STATUS" "status"
  case $OUT in *waiting* | *"$ESC"*) fail "countdown in a background job: '$OUT'" ;; esac
}

test_no_countdown_with_quiet() {
  rl try api -r 1/s
  in_terminal "$RATELIMIT" -q wait api -r 1/s
  expect_eq 0 "$STATUS" "status"
  case $OUT in *waiting* | *"$ESC"*) fail "countdown with -q: '$OUT'" ;; esac
}

test_no_countdown_when_granted_at_once() {
  in_terminal "$RATELIMIT" wait api -r 1/s
  expect_eq 0 "$STATUS" "status"
  expect_eq "" "$OUT" "terminal output"
  in_terminal "$RATELIMIT" try api -r 1/s
  expect_eq 1 "$STATUS" "status of a denied try"
  case $OUT in *waiting*) fail "countdown on try: '$OUT'" ;; esac
}

run_suite
