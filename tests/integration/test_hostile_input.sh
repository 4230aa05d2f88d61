#!/usr/bin/env bash
# Hostile input: each case exits 2 with one line on stderr, never crashes, never touches the
# database, and a hostile key is just a key.
. "$(dirname "$0")/lib.sh"

# expect_usage_error NEEDLE ARGS...: exit 2, one line, NEEDLE in it, and no database made.
expect_usage_error() {
  local needle=$1 expected=2
  shift
  # run's own failures are 125, apart from the command's statuses.
  [ "$1" = run ] && expected=125
  expect_status $expected rl "$@" || return
  expect_one_line || return
  expect_contains "$ERR" "ratelimit: " || return
  expect_contains "$ERR" "$needle" "stderr of: ${*:1:8}"
  expect_true "no database created by: ${*:1:8}" test ! -e "$DB"
}

repeat() { head -c "$2" /dev/zero | tr '\0' "$1"; }

# One argv string is at most 128 KiB (MAX_ARG_STRLEN, NUL included), so a 1 MB key cannot
# reach the program: exec refuses it (E2BIG) before ratelimit starts. The largest key that
# can be passed is refused like any key over 1024 bytes.
test_the_largest_possible_key() {
  expect_usage_error "it is 131071 bytes long; expected a non-empty name of at most 1024 bytes" \
    try "$(repeat k 131071)" -r 1/s
  expect_usage_error "at most 1024 bytes" wait "$(repeat k 131071)" -r 1/s
  expect_usage_error "at most 1024 bytes" run "$(repeat k 131071)" -r 1/s -- true
  expect_usage_error "at most 1024 bytes" pipe "$(repeat k 131071)" -r 1/s
  expect_usage_error "it is 1200 bytes long" try "$(printf 'é%.0s' $(seq 600))" -r 1/s
}

test_a_1mb_key_cannot_even_be_passed() {
  local key
  key=$(repeat k 1048576)
  "$RATELIMIT" try "$key" -r 1/s 2>err
  local status=$?
  # bash reports exec's E2BIG as status 126 ("Argument list too long"): not ours to handle.
  expect_eq 126 "$status" "status of exec with a 1 MB argument"
  expect_contains "$(cat err)" "Argument list too long"
}

test_empty_keys() {
  expect_usage_error 'invalid key ""' try "" -r 1/s
  expect_usage_error 'invalid key ""' wait "" -r 1/s
  expect_usage_error 'invalid key ""' run "" -r 1/s -- true
  expect_usage_error 'invalid key ""' pipe "" -r 1/s
}

test_sql_and_odd_bytes_in_keys_are_just_keys() {
  local key
  for key in "x'); DROP TABLE keys; --" "' OR '1'='1" 'k"; DELETE FROM grant_log; --' \
    "%" "_" "*" "\\" $'line\nbreak' $'\x01\x7f' $'\xff\xfe' "-k" "a b"; do
    expect_status 0 rl try -r 1/min -- "$key" || continue
    expect_status 1 rl try -r 1/min -- "$key"
    expect_one_line
  done
  # Each was its own key; no table was dropped and nothing else was touched.
  expect_eq 12 "$(sqlite3 "$DB" 'SELECT count(*) FROM keys')" "keys stored"
  expect_status 0 rl try other -r 1/min
  expect_eq ok "$(sqlite3 "$DB" 'PRAGMA integrity_check')" "integrity_check"
  # A control character in a key cannot forge a line of output.
  expect_status 1 rl try -r 1/min -- $'line\nbreak'
  expect_one_line
}

test_overflowing_numbers() {
  local huge=99999999999999999999999999999999999999999
  expect_usage_error "the count is above" try k -r "$huge/s"
  expect_usage_error "the count is above" try k -r 9223372036854775808/s
  expect_usage_error "the count is above" try k -r 1000000000001/d
  expect_usage_error "invalid rate" try k -r "1/${huge}s"
  expect_usage_error "invalid rate" try k -r "1/99999999999d"
  expect_usage_error "more than one request per nanosecond" try k -r 1000000000/999ms
  expect_usage_error 'invalid cost' try k -r 5/s -c "$huge"
  expect_usage_error 'invalid cost' try k -r 5/s -c 9223372036854775808
  expect_usage_error 'cost 9223372036854775807 can never be granted' try k -r 5/s -c 9223372036854775807
  expect_usage_error 'invalid burst' try k -r 5/s -b "$huge"
  expect_usage_error "invalid duration" wait k -r 5/s -t "$huge"
  expect_usage_error "invalid duration" wait k -r 5/s -t 99999999999d
  expect_usage_error "longer than 10 years" wait k -r 5/s -t 3661d
  expect_usage_error "invalid duration" try k -r 5/s --lock-timeout "${huge}s"
  expect_usage_error "limited-exit-code" -E "$huge" try k -r 5/s
  expect_usage_error "limited-exit-code" -E 256 try k -r 5/s
  expect_usage_error "limited-exit-code" -E -1 try k -r 5/s
}

# A clock past 2116 (2^62 ns), or past 2262 where int64 nanoseconds end, decides nothing:
# exit 3, and the key is left as it was.
test_a_clock_beyond_the_supported_range_is_refused() {
  on_store sqlite || return 0
  expect_status 0 rl try k -r 1/min
  local offset
  for offset in +100y +300y; do
    expect_status 3 rl_at "$offset" try k -r 1/min
    expect_one_line
    expect_contains "$ERR" 'the clock is beyond the supported range'
    expect_status 3 rl_at "$offset" status
    expect_contains "$ERR" 'the clock is beyond the supported range'
  done
  expect_status 1 rl try k -r 1/min -q
}

# A misspelt option or command gets its near miss, even when the misspelling leaves a
# required option missing.
test_misspelt_options_and_commands_get_a_suggestion() {
  expect_usage_error 'unknown option "--rat"; did you mean "--rate"?; see ratelimit try --help' try k --rat 1/s
  expect_usage_error 'unknown option "--rat"; did you mean "--rate"?' try k -r 1/s --rat 1/s
  expect_usage_error 'unknown option "--jsn"; did you mean "--json"?' --jsn try k -r 1/s
  expect_usage_error 'unknown option "--jso"; did you mean "--json"?' try k -r 1/s --jso
  expect_usage_error 'unknown option "-x"; see ratelimit try --help' try k -r 1/s -x
  expect_usage_error 'unknown command "tyr"; did you mean "try"?; expected one of try, wait,' tyr k -r 1/s
  expect_usage_error 'unknown command "zzzzzz"; expected one of' zzzzzz k
}

# Where users go wrong, the message says what was meant.
test_common_mistakes_get_a_hint() {
  # --backoff-on takes the status the command exits with, not an HTTP status.
  expect_usage_error '--backoff-on: "429" is not an exit status' run k -r 5/s --backoff-on 429 -- curl -sf x
  expect_contains "$ERR" "curl -f exits 22 on an HTTP error"
  # run's options after COMMAND are the command's: named when KEY then has no rate.
  expect_usage_error 'no rate for "k"' run k echo hi -r 5/s
  expect_contains "$ERR" '-r came after COMMAND "echo" and went to it: give run'"'"'s options before COMMAND'
  expect_usage_error '-j, -a, --rate came after COMMAND "echo"' run k echo hi -j 2 -a x --rate=5/s -n
  expect_usage_error 'no rate for "k"' run k echo hi -n
  expect_true "no hint without options of run's after COMMAND: $ERR" \
    test "${ERR/came after COMMAND/}" = "$ERR"
  # wait and try run no command: run does.
  expect_usage_error 'wait runs no command ("curl https://api.example.com/" follows KEY); to run one at its slot: ratelimit run KEY' \
    wait api -r 5/s curl https://api.example.com/
  expect_usage_error 'try runs no command ("curl" follows KEY)' try api curl -r 5/s
  expect_contains "$ERR" "ratelimit run KEY --no-wait"
}

test_fractional_zero_and_negative_costs() {
  local cost
  for cost in 0.5 1.5 1e3 0 -1 -0 +1 0x10 "" " 1" "1 " 1/2 one; do
    expect_usage_error "invalid cost" try k -r 5/s -c "$cost"
  done
}

test_bad_rates() {
  local rate
  for rate in "" / 5 5/ /s 5/s/s " 5/s" "5/s " 1.5/s +5/s 0x5/s 5/-1s 5/1e3s 5/0.0000000001s \
    5/ns 5/S 5/Second 5/1..5s 5/.s; do
    expect_usage_error "invalid rate" try k -r "$rate"
  done
  expect_usage_error 'unknown unit "parsec"' try k -r 5/parsec
  expect_usage_error 'unknown unit "fortnights"' try k -r 5/2fortnights
}

test_bad_durations() {
  local duration
  for duration in -1 -0.5s soon 1..5s 1.s . s 5S 1e3 "1 s" inf nan 0x10 5/s 2fortnight 3ns; do
    expect_usage_error "invalid duration" wait k -r 5/s -t "$duration"
  done
  expect_usage_error 'unknown unit "fortnight"' run k -r 5/s -t 2fortnight -- true
  # An empty timeout is not "no timeout": it exits 2 at once, like any other bad one.
  expect_usage_error "--timeout: invalid duration" wait k -r 5/s -t ""
  expect_usage_error "--timeout: invalid duration" run k -r 5/s -t "" -- true
  expect_usage_error "--timeout: invalid duration" pipe k -r 5/s -t "" </dev/null
  expect_usage_error "--lock-timeout: invalid duration" try k -r 5/s --lock-timeout soon
  expect_usage_error "--lock-timeout: invalid duration" try k -r 5/s --lock-timeout -1s
  # Empty, the store's timeouts are no more "not given" than -t's; and an option given is
  # checked whatever the store (here one that is never reached).
  expect_usage_error "--lock-timeout: invalid duration" try k -r 5/s --lock-timeout ""
  expect_usage_error "--store-timeout: invalid duration" try k -r 5/s --store-timeout ""
  expect_usage_error "--lock-timeout: invalid duration" --store redis://127.0.0.1:1 \
    try k -r 5/s --lock-timeout soon
}

test_unknown_algorithm_and_on_store_error_values() {
  expect_usage_error 'unknown algorithm "token_bucket"; did you mean "token-bucket"?' \
    try k -r 5/s -a token_bucket
  expect_usage_error 'unknown algorithm' try k -r 5/s -a "$(repeat x 100000)"
  local value
  for value in maybe ALLOW LOCAL "" deny,allow "allow "; do
    expect_usage_error '--on-store-error: invalid value' --on-store-error "$value" try k -r 5/s
    expect_contains "$ERR" "expected deny, allow or local"
  done
  expect_usage_error '--on-store-error' try k -r 5/s --on-store-error=fail-open
}

# The rest of a URL is never taken for a host name: it would fail later, as a store error.
test_malformed_store_urls() {
  local url
  for url in 'redis://h?x=1' 'redis://a b' 'redis://h#frag' 'redis://localhost:6379?db=1' \
    $'redis://h\nx' 'redis://[::1' 'redis://[fe80::1%25eth0]'; do
    expect_usage_error 'expected redis[s]://[[user]:password@]host[:port][/db], redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], unix://[[user]:password@]/path[?db=N] or sqlite:PATH' \
      --store "$url" try k -r 1/s
  done
  expect_contains "$ERR" 'invalid IPv6 address "fe80::1%25eth0"'
  RATELIMIT_STORE='redis://h#frag' expect_usage_error \
    'ratelimit: invalid store "redis://h#frag": invalid host "h#frag"' try k -r 1/s
}

run_suite
