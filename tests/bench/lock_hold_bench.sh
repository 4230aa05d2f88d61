#!/usr/bin/env bash
# The critical section of a decision (not a test): how long `try` holds the database's flock,
# from the moment it is granted to the moment it is released, on each algorithm, granted and
# denied, on a key with a pause row and with a remembered limit; against the C baseline
# (tests/bench/baseline.c) under the same lock. With several processes on one key, this is
# what every waiter pays. Measured from outside by an LD_PRELOAD shim on flock()
# (tests/bench/lock_hold.c): nothing in ratelimit itself.
# Prints per scenario the median and 90th percentile of the wall time the lock is held, the
# page faults taken while holding it (median), and, under valgrind, the instructions run
# while holding it and in the whole process (the median of three calls after the others).
# Each scenario has a database of its own.
#   tests/bench/lock_hold_bench.sh [path/to/ratelimit] [calls per scenario, default 200]
# Environment: DETAIL=1 also prints, for the token bucket, where the instructions under the
# lock go (callgrind_annotate, inclusive).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
ratelimit=$(realpath "${1:-$here/../../build/ratelimit}")
calls=${2:-200}
bench_work lock-hold
cc -O2 -shared -fPIC -o "$work/lock_hold.so" "$here/lock_hold.c" -ldl
cc -O2 -o "$work/baseline" "$here/baseline.c" -l:libsqlite3.a -lm -ldl -lpthread
unset RATELIMIT_DB RATELIMIT_STORE RATELIMIT_CONFIG

fast=1000000/s
names=() commands=()
add() { # NAME COMMAND... (with DB for a database of the scenario's own)
  local db=$work/${#names[@]}.db
  names+=("$1")
  shift
  commands+=("${*//DB/$db}")
}
add "C baseline (token bucket)" "$work/baseline $work/base.db k 1000000 1"
add "C baseline, statements prepared before the lock" "$work/baseline $work/early.db k 1000000 1 early"
for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
  add "try, $algorithm" "$ratelimit --db DB try $algorithm -r $fast -a $algorithm"
done
add "try, token-bucket, denied" "$ratelimit --db DB try -q denied -r 1/h -a token-bucket"
add "try, token-bucket, pause row (ended)" "$ratelimit --db DB try paused -r $fast -a token-bucket"
add "try, token-bucket, remembered limit" \
  "$ratelimit --db DB try remembering -r $fast -a token-bucket"
add "try, new key each call" "$ratelimit --db DB try once -r $fast -a token-bucket"

# The database of scenario NAME.
db_of() {
  local i
  for i in "${!names[@]}"; do
    [ "${names[i]}" = "$1" ] && echo "$work/$i.db"
  done
}
# The keys' set-up: a pause that has ended; a limit named once and remembered since (it holds
# grants for an hour, so that it is not forgotten during the run).
"$ratelimit" --db "$(db_of "try, token-bucket, pause row (ended)")" pause paused 0.001
"$ratelimit" --db "$(db_of "try, token-bucket, remembered limit")" try remembering -r "$fast" \
  -r 100000/h -a token-bucket >/dev/null
sleep 0.01
# "A new key each call": reset before each call, so that the decision creates the key's row.
new_key() { "$ratelimit" --db "$(db_of "try, new key each call")" reset once >/dev/null; }

run_scenario() { # INDEX COUNT
  local i=$1 n=$2 k
  for ((k = 0; k < n; k++)); do
    [ "${names[i]}" = "try, new key each call" ] && new_key
    # shellcheck disable=SC2086 # one word an argument: no path here has a space
    LD_PRELOAD=$work/lock_hold.so LOCK_HOLD_LOG=$work/hold.$i ${commands[i]} >/dev/null || true
  done
}

for i in "${!commands[@]}"; do
  run_scenario "$i" 3 # creates the databases and the keys
  : >"$work/hold.$i"
done
# Blocks of ten calls, scenarios in turn, so that the load of the machine falls on all alike.
for ((block = 0; block < calls / 10; block++)); do
  for i in "${!commands[@]}"; do
    run_scenario "$i" 10
  done
done

has_valgrind=
command -v valgrind >/dev/null && has_valgrind=1
# instructions INDEX: "IN_LOCK TOTAL", the medians of three calls under callgrind (a call
# may also checkpoint the WAL, or collect garbage).
instructions() {
  local i=$1 run
  for run in 1 2 3; do
    [ "${names[i]}" = "try, new key each call" ] && new_key
    # shellcheck disable=SC2086
    LD_PRELOAD=$work/lock_hold.so valgrind --tool=callgrind --collect-atstart=no \
      --callgrind-out-file="$work/held.$i.out" ${commands[i]} >/dev/null 2>&1 || true
    awk '/^summary:/ {print $2}' "$work/held.$i.out" >>"$work/held.$i"
    [ "${names[i]}" = "try, new key each call" ] && new_key
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --callgrind-out-file="$work/all.$i.out" ${commands[i]} \
      >/dev/null 2>&1 || true
    awk '/^summary:/ {print $2}' "$work/all.$i.out" >>"$work/all.$i"
  done
  echo "$(sort -n "$work/held.$i" | sed -n 2p) $(sort -n "$work/all.$i" | sed -n 2p)"
}

echo "### The critical section: flock held, per decision ($calls calls each)"
echo
echo "A call under valgrind comes more than a second after the one before: a key's time to"
echo "become fresh, which it stores rounded to a second, has moved, as it does once a second"
echo "for a busy key; writing it is one more statement."
echo
echo "| scenario | held, median | held, p90 | page faults held | instructions held | instructions, whole try |"
echo "| --- | --- | --- | --- | --- | --- |"
for i in "${!commands[@]}"; do
  read -r median p90 < <(median_and_p90 "$work/hold.$i")
  awk '{print $2}' "$work/hold.$i" >"$work/faults.$i"
  read -r faults _ < <(median_and_p90 "$work/faults.$i")
  held=- total=-
  [ -n "$has_valgrind" ] && read -r held total < <(instructions "$i")
  awk -v name="${names[i]}" -v m="$median" -v p="$p90" -v f="$faults" -v h="$held" \
    -v t="$total" 'BEGIN {printf "| %s | %.0f µs | %.0f µs | %d | %s | %s |\n",
      name, m / 1e3, p / 1e3, f, h, t}'
done
if [ -n "$has_valgrind" ] && [ "${DETAIL:-}" = 1 ]; then
  for i in "${!names[@]}"; do
    if [ "${names[i]}" = "try, token-bucket" ]; then
      echo
      callgrind_annotate --inclusive=yes "$work/held.$i.out" | head -60
    fi
  done
fi
