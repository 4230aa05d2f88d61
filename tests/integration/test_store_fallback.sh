#!/usr/bin/env bash
# --on-store-error=local: a decision that cannot reach Redis is made on the local SQLite
# database, with one warning; what is not an outage stays an error. Each test that needs a
# server starts its own redis-server on a free port of 127.0.0.1 and stops it by PID; a
# server that is down is port 1, where nothing listens.
. "$(dirname "$0")/lib.sh"

require_redis_server

DOWN=redis://127.0.0.1:1
WARNING="deciding on the local database"
ALONE="the limit is kept on this host only (--on-store-error=local)"

# A redis-server of the test's own: its URL in $OWN_STORE, its PID in $OWN_PID.
start_own_redis() {
  if ! launch_redis "redis-${FUNCNAME[1]}" redis_answers --port PORT --bind 127.0.0.1; then
    fail "redis-server did not start"
    return 1
  fi
  OWN_PID=$LAUNCHED_PID
  OWN_PORT=$LAUNCHED_PORT
  OWN_STORE=redis://127.0.0.1:$LAUNCHED_PORT
}
stop_own_redis() {
  kill -CONT "$OWN_PID" 2>/dev/null
  kill "$OWN_PID" 2>/dev/null
  wait "$OWN_PID" 2>/dev/null
}

# The local database's count of grants of KEY.
local_granted() {
  "$RATELIMIT" --db local.db --json status "$1" | grep -o '"granted":[0-9]*' | cut -d: -f2
}

test_try_falls_back_and_is_limited_by_the_local_database() {
  expect_status 0 rl --store $DOWN --db local.db --on-store-error=local try k -r 2/min
  expect_one_line
  expect_contains "$ERR" "ratelimit: warning: redis 127.0.0.1:1: cannot connect: connection refused; $WARNING \"local.db\" instead: $ALONE"
  expect_eq "" "$OUT" "stdout"
  # After the command name too.
  expect_status 0 rl --store $DOWN try k -r 2/min --db local.db --on-store-error local
  expect_one_line
  # The third call is limited by the local database.
  expect_status 1 rl --store $DOWN --db local.db --on-store-error=local try k -r 2/min
  expect_contains "$ERR" "$WARNING"
  expect_contains "$ERR" 'ratelimit: "k" limited (sliding-log 2/min); next slot in'
  expect_eq 2 "$(local_granted k)" "grants in the local database"
  # With -q the warning stays, the denial goes.
  expect_status 1 rl -q --store $DOWN --db local.db --on-store-error=local try k -r 2/min
  expect_one_line
  expect_contains "$ERR" "$WARNING"
}

test_json_names_the_store_error() {
  expect_status 0 rl --json --store $DOWN --db local.db --on-store-error=local try k -r 1/min
  expect_eq true "$(json_field "$OUT" allowed)" "allowed"
  expect_eq '"redis 127.0.0.1:1: cannot connect: connection refused"' \
    "$(json_field "$OUT" store_error)" "store_error"
  expect_eq 0 "$(json_field "$OUT" remaining)" "remaining, from the local database"
  expect_status 1 rl --json --store $DOWN --db local.db --on-store-error=local try k -r 1/min
  expect_eq false "$(json_field "$OUT" allowed)" "allowed"
}

test_wait_falls_back_and_sleeps_for_the_local_slot() {
  local start elapsed
  expect_status 0 rl --store $DOWN --db local.db --on-store-error=local wait k -r 2/s -b 1
  expect_one_line
  start=$(now_ms)
  expect_status 0 rl --store $DOWN --db local.db --on-store-error=local wait k -r 2/s -b 1
  elapsed=$(($(now_ms) - start))
  expect_one_line
  expect_contains "$ERR" "$WARNING"
  expect_true "the second wait slept $elapsed ms for its local slot, at least 300" \
    test "$elapsed" -ge 300
  expect_status 1 rl --store $DOWN --db local.db --on-store-error=local wait k -r 1/min -t 1s \
    -a token-bucket -b 1 --json
  expect_contains "$OUT" '"allowed":false'
}

test_run_falls_back_and_is_limited_by_the_local_database() {
  expect_status 7 rl --store $DOWN --db local.db --on-store-error=local run k -r 1/min -- \
    sh -c 'echo ran; exit 7'
  expect_eq ran "$OUT" "the command ran"
  expect_one_line
  expect_contains "$ERR" "$WARNING"
  expect_status 1 rl --store $DOWN --db local.db --on-store-error=local run --no-wait k \
    -r 1/min -- echo ran
  expect_eq "" "$OUT" "the command did not run"
  expect_eq 1 "$(local_granted k)" "grants in the local database"
  # -j: the local database's run slots.
  expect_status 0 rl --store $DOWN --db local.db --on-store-error=local run -j 1 j -- echo held
  expect_eq held "$OUT" "the command ran"
  expect_one_line
  expect_contains "$ERR" "$WARNING"
}

# run --backoff-on pauses the key where the retry decides: the local database.
test_run_backs_off_in_the_local_database() {
  local start elapsed
  start=$(now_ms)
  expect_status 7 rl --store $DOWN --db local.db --on-store-error=local run k -r 10/s \
    --backoff-on 7 --backoff 1s --retries 1 -- sh -c 'echo ran; exit 7'
  elapsed=$(($(now_ms) - start))
  expect_eq $'ran\nran' "$OUT" "two runs"
  expect_true "the retry waited $elapsed ms for the local pause, at least 900" \
    test "$elapsed" -ge 900
  expect_eq 1 "$(grep -c "$WARNING" <<<"$ERR")" "warnings"
}

test_the_default_database_is_the_local_one() {
  expect_status 0 env -u RATELIMIT_DB XDG_STATE_HOME="$TEST_DIR/state" "$RATELIMIT" \
    --store $DOWN --on-store-error=local try k -r 1/min
  expect_contains "$ERR" "$WARNING \"$TEST_DIR/state/ratelimit/ratelimit.db\""
  expect_true "the default database was created" test -f state/ratelimit/ratelimit.db
  # $RATELIMIT_DB names it too.
  expect_status 0 env RATELIMIT_DB="$TEST_DIR/env.db" "$RATELIMIT" --store $DOWN \
    --on-store-error=local try k -r 1/min
  expect_contains "$ERR" "$WARNING \"$TEST_DIR/env.db\""
}

test_a_silent_server_falls_back_within_the_timeout() {
  start_own_redis || return
  kill -STOP "$OWN_PID"
  local start elapsed
  start=$(now_ms)
  expect_status 0 rl --store "$OWN_STORE" --store-timeout 0.3s --db local.db \
    --on-store-error=local try k -r 1/min
  elapsed=$(($(now_ms) - start))
  stop_own_redis
  expect_one_line
  expect_contains "$ERR" "no answer within 0.3s (--store-timeout); $WARNING"
  expect_true "took $elapsed ms, expected 0.3 to 3 s" test "$elapsed" -ge 250 -a "$elapsed" -lt 3000
}

# Redis decides while it works; the local database only once it fails, and Redis again
# once it is back.
test_redis_decides_while_it_works() {
  start_own_redis || return
  expect_status 0 rl --store "$OWN_STORE" --db local.db --on-store-error=local try k -r 1/min
  expect_eq "" "$ERR" "stderr"
  expect_status 1 rl --store "$OWN_STORE" --db local.db --on-store-error=local try k -r 1/min
  expect_true "no local database" test ! -e local.db
  stop_own_redis
  expect_status 0 rl --store "$OWN_STORE" --db local.db --on-store-error=local try k -r 1/min
  expect_contains "$ERR" "$WARNING"
}

# The bound the man page states: while Redis is out of reach, one host admits up to twice
# the limit in a period (N hosts, N + 1 times): its database's limit, and the waiters Redis
# granted before the outage, which go ahead at their slots when they wake.
test_one_host_admits_up_to_twice_the_limit_with_the_waiters_redis_granted() {
  start_own_redis || return
  local store=(--store "$OWN_STORE" --db local.db --on-store-error=local --store-timeout 0.3s)
  local limit=(k -a sliding-log -r 3/4s) i pids=()
  for i in 1 2 3; do
    expect_status 0 rl "${store[@]}" try "${limit[@]}"
  done
  # Three waiters hold Redis's next three slots, 4 s from now.
  for i in 1 2 3; do
    ("$RATELIMIT" "${store[@]}" wait "${limit[@]}" 2>>waiters.err && now_ms >>admitted) &
    pids+=($!)
  done
  local tries=0
  until [ "$(json_field "$("$RATELIMIT" --store "$OWN_STORE" --json status k)" remaining)" = 0 ] &&
    [ "$(redis-cli -p "$OWN_PORT" ZCARD 'ratelimit:{k}:t')" -ge 6 ] || [ $tries -ge 100 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
  stop_own_redis
  # This host goes on alone: the limit again, from its local database, in the same period.
  for i in 1 2 3 4; do
    "$RATELIMIT" "${store[@]}" -q try "${limit[@]}" 2>/dev/null && now_ms >>admitted
  done
  wait "${pids[@]}"
  expect_eq 6 "$(wc -l <admitted)" "admitted while Redis was out of reach, twice the limit of 3"
  local span
  span=$(($(sort -n admitted | tail -n 1) - $(sort -n admitted | head -n 1)))
  expect_true "the six within one period of 4 s: $span ms" test "$span" -lt 4000
  expect_eq 3 "$(grep -c 'going ahead in the slot the store granted' waiters.err)" "waiters' warnings"
  expect_true "the man page states the bound" \
    grep -q 'N hosts admit up to (N + 1) times the limit in a period' "$SUITE_DIR/../../man/ratelimit.1"
}

test_pipe_switches_to_the_local_database_mid_stream() {
  start_own_redis || return
  # The local key has two grants of three left.
  expect_status 0 rl --db local.db try k -r 3/min
  {
    echo first
    sleep 0.5
    # Gone at once, as in a crash; no longer answering before the next record comes.
    kill -KILL "$OWN_PID"
    while redis-cli -p "$OWN_PORT" PING >/dev/null 2>&1; do sleep 0.05; done
    echo second
    echo third
    echo fourth
  } | "$RATELIMIT" --store "$OWN_STORE" --db local.db --on-store-error=local pipe k -r 3/min \
    -t 1s >out 2>err
  local status=$?
  { wait "$OWN_PID"; } 2>/dev/null # reaped quietly
  expect_eq 1 "$status" "status of the pipe, stopped at the fourth record"
  expect_eq $'first\nsecond\nthird' "$(cat out)" "records"
  ERR=$(cat err)
  expect_eq 1 "$(grep -c "$WARNING" err)" "warnings"
  expect_contains "$ERR" "ratelimit: warning: redis 127.0.0.1:$OWN_PORT: "
  expect_contains "$ERR" "no slot within 1s for record 4 on \"k\""
  expect_eq 3 "$(local_granted k)" "grants in the local database"
}

test_pipe_falls_back_from_the_start() {
  expect_status 0 rl --store $DOWN --db local.db --on-store-error=local pipe k -r 100/s \
    <<<$'a\nb'
  expect_eq $'a\nb' "$OUT" "records"
  expect_one_line
  expect_contains "$ERR" "$WARNING"
  expect_eq 2 "$(local_granted k)" "grants in the local database"
}

test_deny_and_allow_are_unchanged() {
  expect_status 3 rl --store $DOWN try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:1: cannot connect: connection refused"
  expect_status 3 rl --store $DOWN --on-store-error=deny try k -r 1/s
  expect_status 0 rl --store $DOWN --on-store-error=allow try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "going on without the store (--on-store-error=allow)"
  # --db and --store together name two stores, but under local.
  expect_status 2 rl --store $DOWN --db local.db try k -r 1/s
  expect_contains "$ERR" "--db and --store both name a store"
  expect_status 2 rl --store $DOWN --db local.db --on-store-error=allow try k -r 1/s
  expect_true "no local database" test ! -e local.db
}

# A key holding values that are not ours is damaged state: an error, never a fallback.
test_damaged_state_is_not_a_fallback() {
  start_own_redis || return
  redis-cli -p "$OWN_PORT" SET 'ratelimit:{s}' foo >/dev/null
  expect_status 3 rl --store "$OWN_STORE" --db local.db --on-store-error=local try s -r 1/min
  expect_one_line
  expect_contains "$ERR" "the state of key \"s\" is damaged; forget it with \`ratelimit reset s\`"
  expect_status 125 rl --store "$OWN_STORE" --db local.db --on-store-error=local run s \
    -r 1/min -- echo ran
  expect_eq "" "$OUT" "the command did not run"
  expect_status 3 rl --store "$OWN_STORE" --db local.db --on-store-error=local pipe s \
    -r 1/min -a sliding-log <<<"record"
  expect_eq "" "$OUT" "records"
  stop_own_redis
  expect_true "no local database" test ! -e local.db
}

# A refused password is a refusal, not an outage.
test_a_refused_password_is_not_a_fallback() {
  start_own_redis || return
  redis-cli -p "$OWN_PORT" CONFIG SET requirepass secret >/dev/null
  expect_status 3 rl --store "redis://:wrong@127.0.0.1:$OWN_PORT" --db local.db \
    --on-store-error=local try k -r 1/min
  stop_own_redis
  expect_one_line
  expect_contains "$ERR" "wrong password or user"
  expect_true "no local database" test ! -e local.db
}

test_a_failing_local_database_exits_3() {
  printf 'not a database\n' >foreign
  expect_status 3 rl --store $DOWN --db foreign --on-store-error=local try k -r 1/min
  expect_contains "$ERR" "$WARNING"
  expect_contains "$ERR" "ratelimit: \"foreign\" is not a ratelimit database"
  expect_status 125 rl --store $DOWN --db foreign --on-store-error=local run k -r 1/min -- echo ran
  expect_eq "" "$OUT" "the command did not run"
}

# With SQLite as the store there is no outage: local acts as deny.
test_local_on_the_sqlite_store_acts_as_deny() {
  printf 'not a database\n' >foreign
  expect_status 3 rl --db foreign --on-store-error=local try k -r 1/min
  expect_one_line
  expect_contains "$ERR" "is not a ratelimit database"
  expect_status 0 rl --on-store-error=local try k -r 1/min
  expect_status 1 rl --on-store-error=local try k -r 1/min
  expect_eq "" "$(sed -n '/warning/p' <<<"$ERR")" "warnings"
}

test_commands_that_are_not_decisions_do_not_fall_back() {
  rl --db local.db try k -r 1/min
  local command
  for command in "status" "status k" "reset k" "pause k 1s" "metrics"; do
    # shellcheck disable=SC2086
    expect_status 3 rl --store $DOWN --db local.db --on-store-error=local $command || continue
    expect_one_line
    expect_contains "$ERR" "ratelimit: redis 127.0.0.1:1: cannot connect: connection refused"
  done
  expect_eq 1 "$(local_granted k)" "the local database, untouched"
}

test_the_configuration_file_says_local() {
  cat >limits.toml <<TOML
[store]
url = "$DOWN"
on_error = "local"
TOML
  local -a env=(env -u RATELIMIT_DB -u RATELIMIT_STORE XDG_STATE_HOME="$TEST_DIR/state")
  expect_status 0 "${env[@]}" "$RATELIMIT" --config limits.toml try k -r 1/min
  expect_one_line
  expect_contains "$ERR" "$WARNING \"$TEST_DIR/state/ratelimit/ratelimit.db\" instead: $ALONE"
  expect_status 1 "${env[@]}" "$RATELIMIT" --config limits.toml try k -r 1/min
  # The command line wins.
  expect_status 3 "${env[@]}" "$RATELIMIT" --config limits.toml --on-store-error=deny \
    try k -r 1/min
  expect_one_line
  expect_contains "$ERR" "cannot connect: connection refused"
}

run_suite
