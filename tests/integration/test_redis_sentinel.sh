#!/usr/bin/env bash
# Redis behind Sentinel (redis-sentinel://): decisions go to the master the sentinels name,
# follow it through a failover (new processes and a long-running one alike), and a store
# whose sentinels cannot be reached exits 3 naming them and the master. Runs its own master,
# replica and sentinel on loopback and stops them by PID.
. "$(dirname "$0")/lib.sh"

require_redis_server

MASTER_NAME=limits
MASTER_PORT=
REPLICA_PORT=
SENTINEL_PORT=

trap stop_servers EXIT

# A port no one listens on now (a test that needs an unreachable sentinel), from bash alone.
free_port() {
  local port
  while :; do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  echo "$port"
}

# Waits (up to 30 s, polling) until the replica on $REPLICA_PORT has its link to the master up.
wait_for_replica_link() {
  local tries
  for tries in $(seq 300); do
    redis-cli -p "$REPLICA_PORT" info replication | tr -d '\r' |
      grep -q '^master_link_status:up' && return 0
    sleep 0.1
  done
  echo "$SUITE_NAME: the replica did not connect to the master" >&2
  exit 1
}

# The port of the master the sentinel names now.
sentinel_master_port() {
  redis-cli -p "$SENTINEL_PORT" SENTINEL get-master-addr-by-name "$MASTER_NAME" | sed -n 2p
}

# The replica's first sync starts at once, not after the default 5 s of diskless delay.
start_server master redis_answers --port PORT --bind 127.0.0.1 --repl-diskless-sync-delay 0
MASTER_PORT=$PORT
start_server replica redis_answers --port PORT --bind 127.0.0.1 --replicaof 127.0.0.1 "$MASTER_PORT"
REPLICA_PORT=$PORT
wait_for_replica_link
# Quorum 1: the one sentinel decides. The failover is asked for (SENTINEL FAILOVER): the
# master, busy for 2 s in one test, is never taken for down (10 s without an answer).
cat >"$WORK_ROOT/sentinel.conf" <<EOF
bind 127.0.0.1
dir $WORK_ROOT
sentinel monitor $MASTER_NAME 127.0.0.1 $MASTER_PORT 1
sentinel down-after-milliseconds $MASTER_NAME 10000
sentinel failover-timeout $MASTER_NAME 10000
EOF
start_server sentinel redis_answers "$WORK_ROOT/sentinel.conf" --sentinel --port PORT
SENTINEL_PORT=$PORT
start_server silent redis_answers --port PORT --bind 127.0.0.1
SILENT_PORT=$PORT
SILENT_PID=${SERVER_PIDS[-1]}
unset RATELIMIT_STORE RATELIMIT_STORE_PASSWORD
# An unreachable sentinel first: the next one answers.
SENTINEL_URL="redis-sentinel://127.0.0.1:$(free_port),127.0.0.1:$SENTINEL_PORT/$MASTER_NAME"

test_decisions_go_to_the_master_the_sentinels_name() {
  local key=s-$RANDOM
  expect_status 0 rl --store "$SENTINEL_URL" try "$key" -r 2/min
  expect_status 0 rl --store "$SENTINEL_URL" try "$key" -r 2/min
  expect_status 1 rl --store "$SENTINEL_URL" try "$key" -r 2/min
  expect_contains "$ERR" "ratelimit: \"$key\" limited" "stderr"
  # On the master itself, and the replica has it.
  expect_true "the key on the master" test "$(redis-cli -p "$MASTER_PORT" --scan \
    --pattern "ratelimit:*$key*" | wc -l)" -ge 1
  expect_status 0 rl --store "$SENTINEL_URL" --json status "$key"
  expect_contains "$OUT" "\"key\":\"$key\""
  expect_contains "$OUT" '"remaining":0'
}

# The database and the master's password come from the URL or RATELIMIT_STORE_PASSWORD;
# the sentinels are asked without it.
test_database_and_password_are_the_masters() {
  local key=db-$RANDOM url="redis-sentinel://127.0.0.1:$SENTINEL_PORT/$MASTER_NAME/3"
  expect_status 0 rl --store "$url" try "$key" -r 1/min
  expect_true "the key in database 3" test "$(redis-cli -p "$MASTER_PORT" -n 3 --scan \
    --pattern "ratelimit:*$key*" | wc -l)" -ge 1
  expect_eq 0 "$(redis-cli -p "$MASTER_PORT" -n 0 --scan --pattern "ratelimit:*$key*" |
    wc -l)" "keys in database 0"
  # The master refuses a password it does not want (no default user's password set): the
  # error comes from the master, not the sentinel, which was asked without one.
  RATELIMIT_STORE_PASSWORD=wrong expect_status 3 rl --store "$url" try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:$MASTER_PORT (master \"$MASTER_NAME\"): "
  expect_contains "$ERR" "AUTH: "
  # An ACL user of the master's, with its password from the environment, that may not run
  # ROLE: the sentinel's word is taken.
  expect_eq OK "$(redis-cli -p "$MASTER_PORT" ACL SETUSER limiter on '>s3cret' '~*' '&*' \
    +@all -role)" "ACL SETUSER"
  RATELIMIT_STORE_PASSWORD=s3cret expect_status 0 rl --store \
    "redis-sentinel://limiter@127.0.0.1:$SENTINEL_PORT/$MASTER_NAME" try "acl-$key" -r 1/min
  RATELIMIT_STORE_PASSWORD=s3cret expect_status 1 rl --store \
    "redis-sentinel://limiter@127.0.0.1:$SENTINEL_PORT/$MASTER_NAME" try "acl-$key" -r 1/min
  redis-cli -p "$MASTER_PORT" ACL DELUSER limiter >/dev/null
}

test_unreachable_sentinels_exit_3_naming_them_and_the_master() {
  local one two started elapsed
  one=$(free_port)
  two=$(free_port)
  started=$(now_ms)
  expect_status 3 rl --store "redis-sentinel://127.0.0.1:$one,127.0.0.1:$two/$MASTER_NAME" \
    --store-timeout 1s try k -r 1/s
  elapsed=$(($(now_ms) - started))
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis-sentinel: no sentinel gave the address of master \"$MASTER_NAME\" (asked 127.0.0.1:$one: cannot connect: connection refused; 127.0.0.1:$two: cannot connect: connection refused)"
  expect_true "took $elapsed ms, expected under 5 s" test "$elapsed" -lt 5000
  # A sentinel that answers but does not know the master.
  expect_status 3 rl --store "redis-sentinel://127.0.0.1:$SENTINEL_PORT/nosuchmaster" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "no sentinel gave the address of master \"nosuchmaster\" (asked 127.0.0.1:$SENTINEL_PORT: master unknown)"
  # A plain server asked as a sentinel says why.
  expect_status 3 rl --store "redis-sentinel://127.0.0.1:$MASTER_PORT/$MASTER_NAME" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "(asked 127.0.0.1:$MASTER_PORT: SENTINEL: "
}

# A decision whose reply does not come may have run: here the master is busy (a script of
# 2 s) when it arrives, and runs it after the pipe gave up on it. It fails with status 3
# and is not sent a second time: the key counts it once.
test_a_decision_without_an_answer_is_not_sent_twice() {
  local key=lost-$RANDOM pipe_pid busy_pid
  local busy="local s = redis.call('TIME') local t
    repeat t = redis.call('TIME') until (t[1] - s[1]) * 1000000 + (t[2] - s[2]) >= 2000000"
  mkfifo records
  rl --store "$SENTINEL_URL" --store-timeout 0.5s pipe "$key" -r 3/min <records >piped \
    2>pipe.err &
  pipe_pid=$!
  exec 3>records
  echo first >&3
  wait_for_lines piped 1 || { exec 3>&-; wait "$pipe_pid"; return; }
  redis-cli -p "$MASTER_PORT" EVAL "$busy" 0 >/dev/null &
  busy_pid=$!
  sleep 0.5
  echo second >&3
  wait "$pipe_pid"
  expect_eq 3 "$?" "the pipe's status"
  exec 3>&-
  wait "$busy_pid"
  expect_eq first "$(cat piped)" "the piped records"
  expect_eq "ratelimit: redis 127.0.0.1:$MASTER_PORT (master \"$MASTER_NAME\"): no answer within 0.5s (--store-timeout) after the command was sent: it may have run, so it is not sent again" \
    "$(cat pipe.err)" "the pipe's stderr"
  # Ran once after the script: two grants of three.
  expect_status 0 rl --store "$SENTINEL_URL" --json status "$key"
  expect_contains "$OUT" '"remaining":1'
}

# A server that takes connections but never answers (stopped): not the suite's sentinel,
# which would take the master for down after a pause of its own.
test_a_silent_sentinel_is_given_up_on_within_the_timeout() {
  local started elapsed
  kill -STOP "$SILENT_PID"
  started=$(now_ms)
  expect_status 3 rl --store "redis-sentinel://127.0.0.1:$SILENT_PORT/$MASTER_NAME" \
    --store-timeout 0.5s try k -r 1/s
  elapsed=$(($(now_ms) - started))
  kill -CONT "$SILENT_PID"
  expect_one_line
  expect_contains "$ERR" "(asked 127.0.0.1:$SILENT_PORT: no answer within 0.5s (--store-timeout))"
  expect_true "took $elapsed ms, expected under 4 s" test "$elapsed" -lt 4000
}

# A command waiting for a run slot blocks in BLPOP on the master; a failover closes that
# connection (as CLIENT KILL does here): the waiter looks again on a new one and runs when
# the holder ends, and the holder ends on a new one too.
test_a_run_slot_waiter_goes_on_when_its_connection_is_closed() {
  local url="redis-sentinel://127.0.0.1:$SENTINEL_PORT/$MASTER_NAME" key=slot-$RANDOM
  local holder waiter tries
  rl --store "$url" run "$key" -j 1 -- sh -c 'touch started; sleep 3' 2>holder.err &
  holder=$!
  for tries in $(seq 200); do
    [ -e started ] && break
    sleep 0.05
  done
  rl --store "$url" run "$key" -j 1 -- touch ran 2>waiter.err &
  waiter=$!
  for tries in $(seq 200); do
    redis-cli -p "$MASTER_PORT" CLIENT LIST | grep -q 'cmd=blpop' && break
    sleep 0.05
  done
  expect_true "a waiter in BLPOP" eval "redis-cli -p $MASTER_PORT CLIENT LIST | grep -q cmd=blpop"
  redis-cli -p "$MASTER_PORT" CLIENT KILL TYPE normal >/dev/null
  wait "$waiter"
  expect_eq 0 "$?" "the waiter's status"
  wait "$holder"
  expect_eq 0 "$?" "the holder's status"
  expect_true "the waiter ran" test -e ran
  expect_eq "" "$(cat waiter.err holder.err)" "stderr"
}

# Waits (up to 10 s) until FILE has N lines.
wait_for_lines() {
  local file=$1 count=$2 tries
  for tries in $(seq 100); do
    [ "$(wc -l <"$file")" -ge "$count" ] && return 0
    sleep 0.1
  done
  fail "$file has $(wc -l <"$file") lines, expected $count"
  return 1
}

# The last test: the sentinel promotes the replica. The key's state was replicated before,
# so that the new master goes on counting from it. A pipe started before the failover
# decides on its connection to the old master; once that one is a replica (READONLY) and
# then once its connections are closed, the pipe asks the sentinel again and goes on.
test_zz_decisions_follow_a_failover() {
  local key=f-$RANDOM tries pipe_pid
  expect_status 0 rl --store "$SENTINEL_URL" try "$key" -r 3/min
  expect_status 0 rl --store "$SENTINEL_URL" try "$key" -r 3/min
  mkfifo records
  rl --store "$SENTINEL_URL" pipe "piped-$RANDOM" -r 1000/min <records >piped 2>pipe.err &
  pipe_pid=$!
  exec 3>records
  echo before >&3
  wait_for_lines piped 1 || { exec 3>&-; wait "$pipe_pid"; return; }
  # Both writes reach the replica before it is promoted.
  expect_eq 1 "$(redis-cli -p "$MASTER_PORT" WAIT 1 10000)" "replicas acknowledging"

  # The sentinel needs a fresh look at the replica before it can promote it, and a busy
  # machine can make it abort a failover it began (it then waits before trying again on its
  # own): ask again whenever none is under way, for up to 60 s.
  for tries in $(seq 300); do
    [ "$(sentinel_master_port)" = "$REPLICA_PORT" ] && break
    redis-cli -p "$SENTINEL_PORT" SENTINEL master "$MASTER_NAME" | grep -q failover_in_progress ||
      redis-cli -p "$SENTINEL_PORT" SENTINEL FAILOVER "$MASTER_NAME" >/dev/null
    sleep 0.2
  done
  expect_eq "$REPLICA_PORT" "$(sentinel_master_port)" "the master's port after the failover" || {
    echo "  the sentinel's log ends with:"
    tail -n 20 "$WORK_ROOT/sentinel.log" | sed 's/^/    /'
    exec 3>&-
    wait "$pipe_pid"
    return
  }
  echo "  failover done after $tries looks"

  # New processes decide on the new master, which holds the key's state: one grant left.
  # The promotion is reported a little before the new master takes writes: a few tries.
  for tries in $(seq 50); do
    rl --store "$SENTINEL_URL" --json status "$key" >status.json 2>status.err &&
      [ "$(redis-cli -p "$REPLICA_PORT" role | head -n 1)" = master ] && break
    sleep 0.1
  done
  expect_contains "$(cat status.json)" '"remaining":1' "status on the new master"
  expect_status 0 rl --store "$SENTINEL_URL" try "$key" -r 3/min
  expect_status 1 rl --store "$SENTINEL_URL" try "$key" -r 3/min
  expect_contains "$ERR" "ratelimit: \"$key\" limited" "stderr"
  expect_true "the key on the new master" test "$(redis-cli -p "$REPLICA_PORT" --scan \
    --pattern "ratelimit:*$key*" | wc -l)" -ge 1

  # The old master becomes a replica, as the sentinel would make it (sooner than its next
  # look): the pipe's next decision is refused with READONLY, and it follows.
  expect_eq OK "$(redis-cli -p "$MASTER_PORT" REPLICAOF 127.0.0.1 "$REPLICA_PORT")" "REPLICAOF"
  echo after-readonly >&3
  wait_for_lines piped 2
  expect_contains "$(redis-cli -p "$MASTER_PORT" info errorstats | tr -d '\r')" \
    "errorstat_READONLY:count=" "the old master's refusals"
  # The new master closes every client's connection: the pipe finds its own closed.
  redis-cli -p "$REPLICA_PORT" CLIENT KILL TYPE normal >/dev/null
  sleep 0.2
  echo after-kill >&3
  wait_for_lines piped 3
  exec 3>&-
  wait "$pipe_pid"
  expect_eq 0 "$?" "the pipe's status"
  expect_eq "before after-readonly after-kill" "$(echo $(cat piped))" "the piped records"
  expect_eq "" "$(cat pipe.err)" "the pipe's stderr"
}

run_suite
