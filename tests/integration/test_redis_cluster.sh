#!/usr/bin/env bash
# Redis Cluster: decisions through any node share one budget, and the commands that list the
# keys (status, metrics, reset --all) see those of every master, not only of the node the
# store URL names. Runs its own cluster of three masters on loopback and stops them by PID.
. "$(dirname "$0")/lib.sh"

require_redis_server

PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3

trap stop_servers EXIT

# Runs a Python expression on the JSON read from stdin, bound to `j`.
json_eval() {
  "$PYTHON" -c 'import json, sys
j = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1"
}

NODE_PORTS=()
for node in 1 2 3; do
  # The port in the configuration file's name: a launch retried on another port starts anew.
  start_server "node$node" redis_answers --port PORT --bind 127.0.0.1 --cluster-enabled yes \
    --cluster-config-file "$WORK_ROOT/nodes-$node-PORT.conf"
  NODE_PORTS+=("$PORT")
done
if ! redis-cli --cluster create "127.0.0.1:${NODE_PORTS[0]}" "127.0.0.1:${NODE_PORTS[1]}" \
  "127.0.0.1:${NODE_PORTS[2]}" --cluster-replicas 0 --cluster-yes >"$WORK_ROOT/create.log" 2>&1; then
  echo "$SUITE_NAME: redis-cli --cluster create failed:" >&2
  cat "$WORK_ROOT/create.log" >&2
  exit 1
fi

# Whether every node says the cluster is ok (all slots served, the nodes agreeing).
cluster_ok() {
  local port
  for port in "${NODE_PORTS[@]}"; do
    redis-cli -p "$port" CLUSTER INFO | tr -d '\r' | grep -q '^cluster_state:ok$' || return 1
  done
}
for tries in $(seq 200); do
  cluster_ok && break
  sleep 0.1
done
if ! cluster_ok; then
  echo "$SUITE_NAME: the cluster's state did not become ok within 20 s" >&2
  exit 1
fi
echo "  cluster: 127.0.0.1 ports ${NODE_PORTS[*]}"

url_of() { echo "redis://127.0.0.1:${NODE_PORTS[$1]}"; }
unset RATELIMIT_STORE_PASSWORD
export RATELIMIT_STORE
RATELIMIT_STORE=$(url_of 0)

# Each test starts with an empty cluster.
empty_cluster() {
  local port
  for port in "${NODE_PORTS[@]}"; do
    redis-cli -p "$port" FLUSHALL >/dev/null
  done
}

# The number of names on the node of port $1.
names_on() { redis-cli -p "$1" DBSIZE; }

# Twenty keys decided through the second node, one grant each; half of them sliding logs.
decide_twenty_keys() {
  local i algorithm
  for i in $(seq 10 29); do
    algorithm=token-bucket
    [ $((i % 2)) = 1 ] && algorithm=sliding-log
    rl --store "$(url_of 1)" try "key$i" -r 5/min -a "$algorithm" || fail "try key$i"
  done
}

# Twenty keys hash to slots on each master, so that a scan of one node would miss some.
expect_keys_on_every_master() {
  local port
  for port in "${NODE_PORTS[@]}"; do
    expect_true "names on the node of port $port" test "$(names_on "$port")" -gt 0
  done
}

test_decisions_through_any_node_share_one_budget() {
  empty_cluster
  local i
  for i in 1 2 3 4 5 6; do
    expect_status 0 rl --store "$(url_of 0)" try "budget$i" -r 1/min
    expect_status 1 rl --store "$(url_of 2)" -q try "budget$i" -r 1/min
    expect_status 1 rl --store "$(url_of 1)" -q try "budget$i" -r 1/min
  done
  expect_keys_on_every_master
}

test_status_lists_the_keys_of_every_master() {
  empty_cluster
  decide_twenty_keys
  expect_keys_on_every_master
  local node expected
  expected=$(seq 10 29 | sed 's/^/key/' | tr '\n' ' ' | sed 's/ $//')
  # Whichever node the URL names.
  for node in 0 2; do
    expect_status 0 rl --store "$(url_of "$node")" --json status
    expect_eq "$expected" "$(json_eval '" ".join(o["key"] for o in j)' <<<"$OUT")" \
      "keys listed through node $node"
    expect_eq "[1]" "$(json_eval 'sorted(set(o["counters"]["granted"] for o in j))' <<<"$OUT")" \
      "granted of each key"
  done
}

test_metrics_lists_the_counters_of_every_key() {
  empty_cluster
  decide_twenty_keys
  expect_status 0 rl metrics
  expect_eq 20 "$(grep -c '^ratelimit_requests_total{key="key[0-9]*",result="granted"} 1$' \
    <<<"$OUT")" "granted samples"
  expect_eq 20 "$(grep -c '^ratelimit_remaining{key="key[0-9]*"} 4$' <<<"$OUT")" \
    "remaining samples"
}

test_reset_all_removes_the_keys_of_every_master() {
  empty_cluster
  decide_twenty_keys
  expect_keys_on_every_master
  expect_status 0 rl --json reset --all
  expect_eq 20 "$(json_field "$OUT" removed)" "removed"
  local port
  for port in "${NODE_PORTS[@]}"; do
    expect_eq 0 "$(names_on "$port")" "names left on the node of port $port"
  done
  expect_status 0 rl status
  expect_eq "" "$OUT" "status after reset --all"
  # The keys start afresh.
  expect_status 0 rl try key10 -r 1/min
}

test_reset_of_a_sliding_log_key_removes_its_logs() {
  empty_cluster
  local key i base names
  for i in 1 2 3 4; do
    key=log$i
    base="ratelimit:{$key}"
    expect_status 0 rl --store "$(url_of 2)" try "$key" -r 2/min -r 5/h -a sliding-log
    # The logs that version 1 kept per limit, by period in microseconds: reset finds them
    # through the periods the key's state holds.
    redis-cli -c -p "${NODE_PORTS[0]}" ZADD "$base:t:60000000" 1 x >/dev/null
    redis-cli -c -p "${NODE_PORTS[0]}" ZADD "$base:c:3600000000" 1 x >/dev/null
    # One slot: one EXISTS counts them all.
    names=("$base" "$base:t" "$base:c" "$base:n" "$base:t:60000000" "$base:c:3600000000")
    expect_eq 6 "$(redis-cli -c -p "${NODE_PORTS[1]}" EXISTS "${names[@]}")" "$key before reset"
    expect_status 0 rl --store "$(url_of 0)" --json reset "$key"
    expect_eq 1 "$(json_field "$OUT" removed)" "removed $key"
    expect_eq 0 "$(redis-cli -c -p "${NODE_PORTS[1]}" EXISTS "${names[@]}")" "$key after reset"
  done
}

test_status_lists_the_commands_on_run_slots_of_every_master() {
  empty_cluster
  touch hold
  local i
  for i in 1 2 3 4 5 6; do
    rl run "job$i" -j 1 -- sh -c 'touch "started.$1"; while [ -e hold ]; do sleep 0.05; done' \
      sh "$i" &
  done
  wait_for_started 6
  expect_status 0 rl --json status
  rm hold
  wait
  expect_eq "job1 job2 job3 job4 job5 job6" \
    "$(json_eval '" ".join(o["key"] for o in j)' <<<"$OUT")" "keys with running commands"
}

test_a_master_that_does_not_answer_exits_3_naming_it() {
  empty_cluster
  decide_twenty_keys
  local stopped=${SERVER_PIDS[2]}
  kill -STOP "$stopped"
  expect_status 3 rl --store-timeout 0.5s status
  kill -CONT "$stopped"
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:${NODE_PORTS[2]}: no answer within"
  expect_status 0 rl --json status
  expect_eq 20 "$(json_eval 'len(j)' <<<"$OUT")" "keys listed once it answers again"
}

# A user that may not ask CLUSTER SLOTS is told so, rather than shown one node's keys.
test_a_user_refused_cluster_slots_is_told_so() {
  empty_cluster
  local port url
  for port in "${NODE_PORTS[@]}"; do
    expect_eq OK "$(redis-cli -p "$port" ACL SETUSER limiter on '>s3cret' '~*' '&*' +@all \
      -cluster)" "ACL SETUSER on port $port"
  done
  url="redis://limiter@127.0.0.1:${NODE_PORTS[0]}"
  RATELIMIT_STORE_PASSWORD=s3cret expect_status 0 rl --store "$url" try k -r 1/min
  RATELIMIT_STORE_PASSWORD=s3cret expect_status 3 rl --store "$url" status
  expect_one_line
  expect_contains "$ERR" "CLUSTER SLOTS: the user may not run it"
  # Named keys need no scan.
  RATELIMIT_STORE_PASSWORD=s3cret expect_status 0 rl --store "$url" status k
  for port in "${NODE_PORTS[@]}"; do
    redis-cli -p "$port" ACL DELUSER limiter >/dev/null
  done
}

run_suite
