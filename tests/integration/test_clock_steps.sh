#!/usr/bin/env bash
# The system clock stepping back or forward, through libfaketime (Debian package faketime;
# it works on our binary because libc is linked dynamically). A key's clock never runs
# backwards: a step back grants nothing extra, and a step forward grants at most what the
# step refills.
. "$(dirname "$0")/lib.sh"

# How many of N tries on KEY with ARGS are granted with the clock at OFFSET ("" = real).
grants() {
  local offset=$1 n=$2 granted=0 i
  shift 2
  for i in $(seq 1 "$n"); do
    if [ -n "$offset" ]; then
      rl_at "$offset" try "$@" 2>/dev/null
    else
      rl try "$@" 2>/dev/null
    fi
    case $? in
    0) granted=$((granted + 1)) ;;
    1) ;;
    *) fail "try $* at $offset failed" ;;
    esac
  done
  echo "$granted"
}

require_faketime() {
  if ! command -v faketime >/dev/null; then
    fail "faketime is missing; scripts/install-deps --test installs it"
    return 1
  fi
  # Check that it really moves our binary's clock: a fresh key's JSON names no time, so
  # compare the store's clock through a fixed window's reset time instead.
  local real shifted
  real=$(rl --db "$TEST_DIR/probe.db" --json try probe -a fixed-window -r 1/d | sed -n 's/.*"reset_after_ms":\([0-9]*\).*/\1/p')
  shifted=$(rl_at +6h --db "$TEST_DIR/probe2.db" --json try probe -a fixed-window -r 1/d | sed -n 's/.*"reset_after_ms":\([0-9]*\).*/\1/p')
  local difference=$(((real - shifted + 86400000) % 86400000))
  if [ "$difference" -lt 21500000 ] || [ "$difference" -gt 21700000 ]; then
    fail "faketime does not move the binary's clock by 6 h (the day's reset moved by $difference ms)"
    return 1
  fi
}

each_algorithm() {
  local algorithm
  for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
    "$@" "$algorithm"
  done
}

# Exhausts KEY at the real time: the number of grants is the capacity a fresh key has for
# `try` (3 for 3/min, fewer for a leaky bucket, whose output is spaced).
exhaust() {
  CAPACITY=$(grants "" 8 "$@")
  expect_true "$1: $CAPACITY grants from a fresh key, then limited" test "$CAPACITY" -ge 1 -a "$CAPACITY" -lt 8
}

step_back_grants_nothing() {
  local algorithm=$1 key=$1
  # Windows are calendar minutes: the checks must not cross into the next one.
  case $algorithm in
  fixed-window | sliding-window) ensure_window_margin 60 20 ;;
  esac
  exhaust "$key" -a "$algorithm" -r 3/min
  expect_eq 0 "$(grants -1h 5 "$key" -a "$algorithm" -r 3/min)" "$algorithm: grants 1 h back"
  expect_eq 0 "$(grants -1m 3 "$key" -a "$algorithm" -r 3/min)" "$algorithm: grants 1 min back"
  expect_status 1 rl_at -1h wait "$key" -a "$algorithm" -r 3/min -t 1s
  expect_eq 0 "$(grants "" 3 "$key" -a "$algorithm" -r 3/min)" "$algorithm: grants back at the real time"
}

test_a_step_back_grants_nothing_extra() {
  require_faketime || return
  each_algorithm step_back_grants_nothing
}

step_forward_refills_at_most_the_capacity() {
  local algorithm=$1 key=$1
  exhaust "$key" -a "$algorithm" -r 3/min
  # An hour refills everything, and never more than a fresh key's capacity.
  expect_eq "$CAPACITY" "$(grants +1h 8 "$key" -a "$algorithm" -r 3/min)" "$algorithm: grants 1 h ahead"
  # Back to the real time: the key has seen +1 h, and grants nothing until then.
  expect_eq 0 "$(grants "" 3 "$key" -a "$algorithm" -r 3/min)" "$algorithm: grants after the step back"
}

test_a_step_forward_refills_at_most_the_capacity() {
  require_faketime || return
  each_algorithm step_forward_refills_at_most_the_capacity
}

# A step of one emission interval (20 s at 3/min, plus a second) refills one unit of a
# bucket, and frees nothing in a sliding log whose entries are all younger than a period.
test_a_small_step_forward_refills_what_it_should() {
  require_faketime || return
  local algorithm
  for algorithm in token-bucket leaky-bucket; do
    exhaust "$algorithm" -a "$algorithm" -r 3/min
    expect_eq 1 "$(grants +21s 4 "$algorithm" -a "$algorithm" -r 3/min)" "$algorithm: grants 21 s ahead"
  done
  exhaust log -a sliding-log -r 3/min
  expect_eq 0 "$(grants +21s 4 log -a sliding-log -r 3/min)" "sliding-log: grants 21 s ahead"
}

run_suite
