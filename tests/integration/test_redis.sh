#!/usr/bin/env bash
# What only the Redis store has: the server's clock, connection errors and timeouts, URLs,
# passwords, key names, expiry, damaged values. Runs against a redis-server of its own
# (lib.sh). Exit statuses, JSON, signals, concurrency and the algorithms on Redis are tested
# by the suites that run once per store (test_core.redis, test_algorithms.redis, ...).
RATELIMIT_TEST_STORE=redis
. "$(dirname "$0")/lib.sh"

SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)

# 8 processes trying at once on one key never admit more than the limit allows.
test_eight_processes_never_over_admit() {
  local algorithm expected granted
  for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
    # A period long enough that nothing refills during the test: exactly 20 grants, or
    # one for the leaky bucket, whose try is granted only at an empty queue's output time.
    expected=20
    [ "$algorithm" = leaky-bucket ] && expected=1
    for job in 1 2 3 4 5 6 7 8; do
      (for i in 1 2 3 4 5 6 7 8 9 10; do
        rl -q try "race-$algorithm" -r 20/10d -a "$algorithm" && echo granted
      done) >"out.$job" &
    done
    wait
    granted=$(cat out.* | grep -c granted)
    expect_eq "$expected" "$granted" "$algorithm grants from 80 tries by 8 processes"
    rm -f out.*
  done
}

test_the_clock_is_the_servers() {
  command -v faketime >/dev/null || { fail "faketime is missing; scripts/install-deps --test installs it"; return; }
  # The control: on a SQLite store the client's clock decides, so +2h finds the key full.
  expect_status 0 rl --db local.db try k -r 1/min
  expect_status 0 rl_at +2h --db local.db try k -r 1/min
  expect_status 0 rl try k -r 1/min
  # Clients two hours ahead or behind see the same key: the server's clock decides.
  local offset retry
  for offset in +2h -2h; do
    expect_status 1 rl_at "$offset" --json try k -r 1/min || continue
    retry=$(json_field "$OUT" retry_after_ms)
    expect_true "retry_after_ms $retry at $offset, about a minute" \
      [ "$retry" -gt 50000 -a "$retry" -le 60000 ]
  done
}

test_server_down_exits_3_at_once() {
  local started elapsed
  started=$(now_ms)
  expect_status 3 rl --store redis://127.0.0.1:1 try k -r 1/s
  elapsed=$(($(now_ms) - started))
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:1: cannot connect: connection refused"
  # Refused at once: well within the default timeout of 1 s, even on a loaded machine.
  expect_true "took $elapsed ms" test "$elapsed" -lt 1000
}

test_silent_server_exits_3_within_the_timeout() {
  local started elapsed
  kill -STOP "$REDIS_PID"
  started=$(now_ms)
  expect_status 3 rl --store-timeout 0.5s try k -r 1/s
  elapsed=$(($(now_ms) - started))
  kill -CONT "$REDIS_PID"
  expect_one_line
  expect_contains "$ERR" "no answer within 0.5s (--store-timeout)"
  # The timeout, plus a process start on a loaded machine.
  expect_true "took $elapsed ms, expected 0.5 to 3 s" test "$elapsed" -ge 450 -a "$elapsed" -lt 3000
}

test_malformed_url_exits_2() {
  expect_status 2 rl --store redis:/localhost try k -r 1/s
  expect_one_line
  expect_contains "$ERR" 'ratelimit: invalid store "redis:/localhost": unknown scheme; expected redis[s]://[[user]:password@]host[:port][/db], redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], unix://[[user]:password@]/path[?db=N] or sqlite:PATH'
  RATELIMIT_STORE=redis://host:99999 expect_status 2 rl try k -r 1/s
  expect_one_line
  expect_status 2 rl --store redis://127.0.0.1 --db x.db try k -r 1/s
  expect_contains "$ERR" "--db and --store both name a store"
  expect_status 2 rl --store-timeout 0 try k -r 1/s
}

test_password_is_sent_and_never_shown() {
  rcli CONFIG SET requirepass 'pa@ss' >/dev/null
  expect_status 0 rl --store "redis://:pa%40ss@127.0.0.1:$REDIS_PORT" try k -r 1/s
  expect_status 3 rl --store "redis://:hunter2x@127.0.0.1:$REDIS_PORT" try k -r 1/s
  expect_one_line
  expect_true "the password is not in the message: $ERR" test "${ERR#*hunter2x}" = "$ERR"
  rcli -a 'pa@ss' --no-auth-warning CONFIG SET requirepass '' >/dev/null
}

# A server that wants a password closes the connection of a client without one at its
# first long command; the message names the cause and the URL form, never the password.
test_refused_authentication_names_its_cause() {
  rcli CONFIG SET requirepass 'pa@ss' >/dev/null
  expect_status 3 rl --store "redis://127.0.0.1:$REDIS_PORT" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:$REDIS_PORT: authentication required: the server wants a password; give it in RATELIMIT_STORE_PASSWORD or in the store URL, redis://[USER]:PASSWORD@HOST[:PORT][/DB]"
  expect_status 3 rl --store "redis://127.0.0.1:$REDIS_PORT" status
  expect_contains "$ERR" "authentication required"
  expect_status 3 rl --store "redis://:hunter2x@127.0.0.1:$REDIS_PORT" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "wrong password or user"
  expect_true "the password is not in the message: $ERR" test "${ERR#*hunter2x}" = "$ERR"
  rcli -a 'pa@ss' --no-auth-warning CONFIG SET requirepass '' >/dev/null
}

test_keys_live_under_the_prefix_in_one_hash_tag() {
  # One log per key, whatever periods its limits have.
  expect_status 0 rl --redis-prefix app: try 'my key' -r 5/s -r 10/min -a sliding-log
  expect_status 0 rl try plain -r 5/min -a token-bucket
  expect_eq 'app:{my key}
app:{my key}:c
app:{my key}:n
app:{my key}:t
ratelimit:{plain}
ratelimit:{plain}:n' "$(rcli --scan | sort)" "key names"
  expect_eq hash "$(rcli type 'app:{my key}')" "state type"
  expect_eq zset "$(rcli type 'app:{my key}:t')" "log type"
  expect_eq hash "$(rcli type 'app:{my key}:n')" "counters type"
}

# A prefix with a hash tag would place a key's names on several Cluster nodes (CROSSSLOT),
# or every key on one: refused on every server, so that what works on one works on a
# cluster.
test_a_prefix_with_braces_is_refused() {
  local prefix
  for prefix in 'app{}:' 'a{x}:' 'a}b:'; do
    expect_status 2 rl --redis-prefix "$prefix" try k -r 1/s
    expect_one_line
    expect_contains "$ERR" "invalid Redis key prefix \"$prefix\" (--redis-prefix, \$RATELIMIT_REDIS_PREFIX): expected one without { or }, e.g. app:"
  done
  RATELIMIT_REDIS_PREFIX='app{}:' expect_status 2 rl wait k -r 1/s
  expect_status 125 rl --redis-prefix 'a{x}:' run k -r 1/s -- true
  expect_eq "" "$(rcli --scan)" "names written"
}

# A waiter that Redis granted keeps its slot when Redis cannot be reached as it wakes to
# check for a pause: wait exits 0 and run runs its command, each with one warning; the slot
# stays counted on the server, so nothing is admitted twice.
test_a_granted_waiter_goes_ahead_when_redis_stops_answering_as_it_wakes() {
  expect_status 0 rl try k -r 1/2s
  (rl --store-timeout 0.3s wait k -r 1/2s 2>wait.err; echo $? >wait.status) &
  local waiter=$!
  # The key's next slot: 2 s away after the try, 4 s after the waiter's reservation, 6 s after
  # the runner's, less the time since: each threshold lies between two of them.
  wait_for_reservation k 2500 || return
  (rl --store-timeout 0.3s run k -r 1/2s -- touch ran 2>run.err; echo $? >run.status) &
  local runner=$!
  wait_for_reservation k 4500 || return
  # Asleep, and closed their connections: they connect again on waking, and get no answer.
  kill -STOP "$REDIS_PID"
  wait "$waiter" "$runner"
  kill -CONT "$REDIS_PID"
  expect_eq 0 "$(cat wait.status)" "wait's status"
  expect_eq 0 "$(cat run.status)" "run's status"
  expect_true "run ran its command" test -e ran
  local file
  for file in wait.err run.err; do
    expect_eq 1 "$(wc -l <$file)" "lines in $file"
    expect_contains "$(cat $file)" 'ratelimit: warning: cannot check "k" for a pause: redis 127.0.0.1:'
    expect_contains "$(cat $file)" "; going ahead in the slot the store granted"
  done
}

test_counters_expire_a_month_after_the_last_decision() {
  expect_status 0 rl try k -r 1/1s -a token-bucket
  local ttl
  ttl=$(rcli pttl 'ratelimit:{k}:n')
  expect_true "counters pttl $ttl: 31 days" \
    test "$ttl" -gt $((31 * 86400 * 1000 - 60000)) -a "$ttl" -le $((31 * 86400 * 1000))
  expect_eq "granted 1" "$(rcli hgetall 'ratelimit:{k}:n' | paste -sd ' ')" "counters"
  sleep 1.1
  # The state has expired; the counters have not.
  expect_eq 0 "$(rcli exists 'ratelimit:{k}')" "state after its reset_after"
  expect_eq 1 "$(rcli exists 'ratelimit:{k}:n')" "counters after the state expired"
}

test_values_expire_when_the_state_is_fresh_again() {
  expect_status 0 rl try k -r 1/1s
  local ttl
  ttl=$(rcli pttl 'ratelimit:{k}')
  expect_true "pttl $ttl in (0, 1002]" test "$ttl" -gt 0 -a "$ttl" -le 1002
  sleep 1.1
  expect_eq 0 "$(rcli exists 'ratelimit:{k}')" "key after its reset_after"
  expect_status 0 rl try k -r 1/1s
}

# The clients connected to the suite's server, but for the redis-cli that asks.
other_clients() { rcli client list | grep -v 'cmd=client' | grep -c 'id=' || true; }

test_a_waiter_holds_no_connection_while_it_sleeps() {
  expect_status 0 rl try sleeper -r 1/3s -b 1
  "$RATELIMIT" -q wait sleeper -r 1/3s -b 1 &
  local waiter=$! retry
  wait_for_reservation sleeper 4000
  expect_eq 0 "$(other_clients)" "connections held while the waiter sleeps"
  # It gives its slot back on a signal all the same, over a new connection: the next slot
  # is its own again, 3 s after the first, not 6.
  kill -TERM $waiter
  wait $waiter
  expect_status 1 rl --json try sleeper -r 1/3s -b 1
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "next slot in $retry ms, not after the waiter's" test "$retry" -le 3000
}

test_a_connection_the_server_closed_while_idle_is_made_again() {
  # pipe keeps its connection between records that come faster than a second apart; the
  # server ends it meanwhile (as its `timeout` or a restart would), and the next record
  # connects again rather than fail.
  {
    echo one
    sleep 0.5
    rcli client kill type normal >/dev/null
    sleep 0.3
    echo two
  } | rl pipe idle -r 100/s >out 2>err
  expect_eq "0 one two" "$? $(cat out | tr '\n' ' ' | sed 's/ $//')" "status and records"
  expect_eq "" "$(cat err)" "stderr"
}

test_redis_db_is_selected() {
  expect_status 0 rl --store "redis://127.0.0.1:$REDIS_PORT/3" try k -r 1/s
  expect_eq 0 "$(rcli exists 'ratelimit:{k}')" "key in db 0"
  expect_eq 1 "$(rcli -n 3 exists 'ratelimit:{k}')" "key in db 3"
}

test_sqlite_url_means_db() {
  expect_status 0 rl --store "sqlite:$TEST_DIR/other.db" try k -r 1/s
  expect_true "the database was created" test -f "$TEST_DIR/other.db"
  expect_status 1 rl --db "$TEST_DIR/other.db" --store-timeout 1s try k -r 1/s
  RATELIMIT_STORE="sqlite:$TEST_DIR/env.db" expect_status 0 rl try k -r 1/s
  expect_true "RATELIMIT_STORE=sqlite:PATH created it" test -f "$TEST_DIR/env.db"
  expect_eq "" "$(rcli --scan)" "redis keys"
}

test_version_lists_the_stores() {
  expect_status 0 rl --version
  expect_contains "$OUT" "stores: sqlite, redis"
}

# A value of another type under a key's name (set by hand, say) is damaged state, as an
# unreadable row is in SQLite: decisions refuse it naming the key as the user knows it, and
# reset forgets it.
test_a_value_of_another_type_is_damaged_state_that_reset_forgets() {
  rcli SET 'ratelimit:{s}' foo >/dev/null
  local message="ratelimit: redis 127.0.0.1:$REDIS_PORT: the state of key \"s\" is damaged; forget it with \`ratelimit reset s\`"
  expect_status 3 rl try s -r 1/min
  expect_one_line
  expect_eq "$message" "$ERR" "try"
  expect_status 3 rl wait s -r 1/min
  expect_eq "$message" "$ERR" "wait"
  expect_status 125 rl run s -r 1/min -- true
  expect_eq "$message" "$ERR" "run"
  expect_status 3 rl status s
  expect_eq "$message" "$ERR" "status"
  expect_status 0 rl --json reset s
  expect_eq 1 "$(json_field "$OUT" removed)" "removed"
  expect_eq 0 "$(rcli exists 'ratelimit:{s}')" "the value after reset"
  expect_status 0 rl try s -r 1/min
  expect_status 1 rl try s -r 1/min -q
}

test_a_sliding_log_of_another_type_is_damaged_state_that_reset_forgets() {
  expect_status 0 rl try s -r 5/min -a sliding-log
  rcli SET 'ratelimit:{s}:t' foo >/dev/null
  expect_status 3 rl try s -r 5/min -a sliding-log
  expect_one_line
  expect_contains "$ERR" 'the state of key "s" is damaged; forget it with `ratelimit reset s`'
  expect_status 3 rl status
  expect_contains "$ERR" 'the state of key "s" is damaged'
  expect_status 0 rl reset s
  expect_eq "" "$(rcli --scan)" "keys after reset"
  expect_status 0 rl try s -r 5/min -a sliding-log
}

# A test for one store only is reported as skipped on the other, not as passed.
test_a_test_for_the_other_store_is_reported_as_skipped() {
  cat >test_probe.sh <<EOF
. "$SUITE_DIR/lib.sh"
test_for_both() { expect_status 0 rl try k -r 1/s; }
test_for_redis_only() { on_store redis || return 0; fail "ran on \$STORE"; }
run_suite
EOF
  expect_status 0 env -u RATELIMIT_TEST_STORE -u TEST_FILTER -u TEST_ONLY -u TEST_SKIP TMPDIR="$TEST_DIR" bash test_probe.sh \
    "$RATELIMIT"
  expect_contains "$OUT" "  ok   test_for_both"
  expect_contains "$OUT" "  skip test_for_redis_only: only on the redis store"
  expect_contains "$OUT" "test_probe: 1 passed, 1 skipped, 0 failed"
}

# Without redis-server a suite on Redis is skipped, unless Redis is required: scripts/test
# (what CI runs) requires it, and so does CI=true.
test_a_missing_redis_server_fails_when_redis_is_required() {
  mkdir bin
  local tool
  for tool in dirname basename mktemp rm; do
    ln -s "$(command -v "$tool")" bin/
  done
  printf 'RATELIMIT_TEST_STORE=redis\n. "%s/lib.sh"\nrun_suite\n' "$SUITE_DIR" >test_probe.sh
  local bash
  bash=$(command -v bash)
  probe() {
    env -u CI -u RATELIMIT_REQUIRE_REDIS PATH="$TEST_DIR/bin" TMPDIR="$TEST_DIR" "$@" \
      "$bash" test_probe.sh "$RATELIMIT"
  }
  expect_status 77 probe
  expect_contains "$OUT" "test_probe: skipped: redis-server is not installed"
  expect_status 1 probe RATELIMIT_REQUIRE_REDIS=1
  expect_one_line
  expect_contains "$ERR" "test_probe: redis-server is required"
  expect_status 1 probe CI=true
  expect_contains "$ERR" "test_probe: redis-server is required"
  expect_true "scripts/test requires Redis" \
    grep -qx 'export RATELIMIT_REQUIRE_REDIS=1' "$SOURCE_DIR/scripts/test"
}

run_suite
