#!/usr/bin/env bash
# scripts/demo tells the truth: run with the binary under test (RATELIMIT=...), on the test's
# own database, what it prints holds: the times of the shared limit, the API's answers, the
# limited decision at the end; and it leaves nothing behind.
. "$(dirname "$0")/lib.sh"

SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)

# The times in ms of part 1's grants, sorted, one a line.
grant_times() {
  sed -nE 's/^ +([0-9]+) ms  job [0-9], request [0-9]$/\1/p' <<<"$OUT" | sort -n
}

test_the_demo_shows_what_it_says() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  local started=$SECONDS took
  expect_status 0 env RATELIMIT="$RATELIMIT" TMPDIR="$TEST_DIR" "$SOURCE_DIR/scripts/demo" ||
    return
  took=$((SECONDS - started))
  echo "$OUT" >demo.out
  expect_eq "" "$ERR" "stderr"

  # 1. 12 grants: 5 at once, the next 5 a second after them, the last 2 a second later; never
  # more than 5 in any second. The times are taken once each `wait` has ended, by then up to
  # 300 ms after its grant on a loaded machine (a sanitized process's exit beside busy
  # suites): a grant shown late makes the next one a second after it look early. The hammer
  # tests (test_algorithms) check the bound itself, each grant between its call's start and
  # end.
  local -a times
  mapfile -t times < <(grant_times)
  expect_eq 12 "${#times[@]}" "grants shown" || return
  expect_true "the first 5 at once: ${times[*]}" test $((times[4] - times[0])) -lt 500
  local i
  for i in 0 1 2 3 4 5 6; do
    expect_true "grants $i and $((i + 5)) less than a second apart: ${times[*]}" \
      test $((times[i + 5] - times[i])) -ge 700
  done
  expect_true "the next 5 about a second later: ${times[*]}" \
    test $((times[9] - times[0])) -lt 2500
  expect_true "the last 2 about a second after them: ${times[*]}" \
    test $((times[11] - times[5])) -lt 2500

  # 2. Through run, answers 429; through run --until-exit, none. As the API logged them.
  local answers
  answers=$(grep -E '^ +answers: ' <<<"$OUT")
  expect_eq 2 "$(wc -l <<<"$answers")" "answer lines" || return
  local plain until_exit
  plain=$(sed -n 1p <<<"$answers")
  until_exit=$(sed -n 2p <<<"$answers")
  [[ $plain =~ answers:\ ([0-9]+)\ x\ 200,\ ([0-9]+)\ x\ 429 ]] || fail "unexpected line: $plain"
  expect_eq 15 $((BASH_REMATCH[1] + BASH_REMATCH[2])) "calls answered through run"
  expect_true "the demo says some calls through run get 429: $plain" test "${BASH_REMATCH[2]}" -gt 0
  expect_contains "$until_exit" "answers: 15 x 200, 0 x 429" "through run --until-exit"

  # 3. The call made during the last round is limited and never reaches the API.
  expect_true "a limited decision: $OUT" grep -qE '^ +ratelimit: "api-until-exit-[0-9]+" limited' \
    <<<"$OUT"
  expect_contains "$OUT" "Exit status 1: limited, and curl did not run: the API saw the 15 calls, no more."

  # On the database it names, its keys reset; the stand-in stopped, the scratch files gone.
  expect_contains "$OUT" "Database: $DB (the demo's keys are reset)"
  expect_status 0 rl --json status
  expect_eq "[]" "$OUT" "keys left"
  local port
  port=$(sed -nE 's/.*stand-in on 127\.0\.0\.1:([0-9]+) .*/\1/p' demo.out)
  expect_true "the port of the stand-in is shown" test -n "$port"
  expect_status 7 curl -s "http://127.0.0.1:$port/"
  expect_eq "" "$(find "$TEST_DIR" -maxdepth 1 -name 'ratelimit-demo.*')" "scratch directories left"
  # About ten seconds; generous on a loaded machine.
  expect_true "the demo took $took s" test "$took" -lt 30
}

run_suite
