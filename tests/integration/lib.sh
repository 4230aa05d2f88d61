# Shared by the integration suites. Each suite is run by ctest as
#   bash tests/integration/test_NAME.sh /path/to/ratelimit
# Every test runs in a temporary directory of its own with its own database; a failing
# test keeps its directory and says where.
#
# A suite defines functions named test_*, sources this file, and calls `run_suite`.

set -u

RATELIMIT=${1:?usage: test_SUITE.sh /path/to/ratelimit}
RATELIMIT=$(cd "$(dirname "$RATELIMIT")" && pwd)/$(basename "$RATELIMIT")
SUITE_NAME=$(basename "$0" .sh)
SUITE_DIR=$(cd "$(dirname "$0")" && pwd)
WORK_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/ratelimit-${SUITE_NAME}.XXXXXX")

# Within a test: the directory, the database, and the binary with that database.
TEST_DIR=
DB=
export RATELIMIT_DB=
# No configuration file of the user's or the system's: a test that wants one writes its own
# (see test_config.sh).
unset RATELIMIT_CONFIG
export XDG_CONFIG_HOME=/nonexistent/ratelimit-tests RATELIMIT_SYSTEM_CONFIG=/nonexistent/ratelimit-tests/limits.toml

rl() { "$RATELIMIT" "$@"; }

# Runs the binary with the wall clock shifted by OFFSET (e.g. -1h, +20s); the monotonic
# clock, which times the sleeps, is left alone.
# Under AddressSanitizer (RATELIMIT_SANITIZE): with GCC's runtime, a shared library,
# libfaketime comes before it in the library list, which it would refuse; clang's runtime,
# linked in, reads the clock while it first maps memory for malloc, and libfaketime's first
# clock_gettime calls malloc: a deadlock unless the allocator never times its releases.
rl_at() {
  local offset=$1
  shift
  local options=verify_asan_link_order=0:allocator_release_to_os_interval_ms=-1
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}$options" \
    faketime --exclude-monotonic -f "$offset" "$RATELIMIT" "$@"
}

# The store a suite runs against: RATELIMIT_TEST_STORE=redis (set by ctest for the suites
# registered once per store, or by a suite before sourcing this file) starts a redis-server
# of the suite's own on 127.0.0.1 at a free port, with no persistence, points
# RATELIMIT_STORE at it and empties it before every test; it is stopped by PID at the end.
# Without redis-server the suite is skipped (exit 77), unless Redis is required
# (RATELIMIT_REQUIRE_REDIS=1, as scripts/test sets it, or CI=true): then it fails.
STORE=${RATELIMIT_TEST_STORE:-sqlite}
REDIS_PORT=
REDIS_PID=

# For a test that applies to one store only (it reads the SQLite file, say):
#   on_store sqlite || return 0
# On the other store the test is reported as skipped, not as passed.
on_store() {
  if [ "$STORE" = "$1" ]; then
    return 0
  fi
  skip "only on the $1 store"
  return 1
}

# Sleeps until at least `margin` seconds remain in the current window of `period` seconds
# since the epoch, so that a test on a window algorithm does not straddle two windows.
ensure_window_margin() {
  local period=$1 margin=$2 now left
  now=$(now_us)
  left=$((period * 1000000 - now % (period * 1000000)))
  if [ "$left" -lt $((margin * 1000000)) ]; then
    sleep "$(printf '%d.%06d' $((left / 1000000)) $((left % 1000000)))"
    sleep 0.2
  fi
}

# Marks the running test as skipped, for REASON, unless it also failed; the test then
# returns without checking anything more.
skip() { _skipped=$*; }

# Whether a missing redis-server must fail the suite rather than skip it.
redis_required() { [ "${RATELIMIT_REQUIRE_REDIS:-}" = 1 ] || [ "${CI:-}" = true ]; }

# redis-cli against the suite's server.
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

stop_redis() {
  if [ -n "$REDIS_PID" ]; then
    kill -CONT "$REDIS_PID" 2>/dev/null
    kill "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
    REDIS_PID=
  fi
}

# launch_redis NAME IS_READY ARGUMENTS...: a redis-server on a free port of 127.0.0.1, given
# ARGUMENTS with PORT in them replaced by the port, its data in $WORK_ROOT and its log in
# $WORK_ROOT/NAME.log. Waits until `IS_READY PORT PID NAME` succeeds, then sets LAUNCHED_PORT
# and LAUNCHED_PID; fails when no attempt got that far.
launch_redis() {
  local name=$1 is_ready=$2 attempt port pid tries
  shift 2
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    redis-server "${@//PORT/$port}" --save '' --appendonly no --dir "$WORK_ROOT" \
      >"$WORK_ROOT/$name.log" 2>&1 &
    pid=$!
    for tries in $(seq 200); do
      if "$is_ready" "$port" "$pid" "$name"; then
        LAUNCHED_PORT=$port
        LAUNCHED_PID=$pid
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  return 1
}

# IS_READY checks for launch_redis. redis_answers: the server on port $1 says it is process
# $2: ours, not another server that already had the port.
redis_answers() {
  [ "$(redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' |
    sed -n 's/^process_id://p')" = "$2" ]
}
# redis_log_says_ready: the log of server $3 says it is ready (for servers redis-cli cannot
# reach without options, such as TLS ones).
redis_log_says_ready() {
  grep -q "Ready to accept connections" "$WORK_ROOT/$3.log"
}

# Skips the suite (exit 77) when redis-server or redis-cli is missing, or fails it when Redis
# is required.
require_redis_server() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    if redis_required; then
      echo "$SUITE_NAME: redis-server is required (RATELIMIT_REQUIRE_REDIS=1 or CI=true)" \
        "but not installed (apt-get install redis-server)" >&2
      exit 1
    fi
    echo "$SUITE_NAME: skipped: redis-server is not installed"
    exit 77
  fi
}

# For the suites that run several servers of their own. start_server NAME IS_READY
# ARGUMENTS...: a redis-server launched as launch_redis does, its port in $PORT and its PID
# in SERVER_PIDS; stop_servers (trapped at exit) stops them all, stopped ones too.
SERVER_PIDS=()
start_server() {
  local name=$1
  shift
  if ! launch_redis "$name" "$@"; then
    echo "$SUITE_NAME: redis-server ($name) did not start:" >&2
    cat "$WORK_ROOT/$name.log" >&2
    exit 1
  fi
  SERVER_PIDS+=("$LAUNCHED_PID")
  PORT=$LAUNCHED_PORT
  echo "  $name: redis-server pid $LAUNCHED_PID, port $PORT"
}
stop_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    kill -CONT "$pid" 2>/dev/null
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}

start_redis() {
  require_redis_server
  if launch_redis redis redis_answers --port PORT --bind 127.0.0.1; then
    REDIS_PORT=$LAUNCHED_PORT
    REDIS_PID=$LAUNCHED_PID
    trap stop_redis EXIT
    export RATELIMIT_STORE="redis://127.0.0.1:$REDIS_PORT"
    echo "  store: $RATELIMIT_STORE (redis-server pid $REDIS_PID)"
    return 0
  fi
  echo "$SUITE_NAME: redis-server did not start on 127.0.0.1" >&2
  exit 1
}

if [ "$STORE" = redis ]; then
  start_redis
else
  unset RATELIMIT_STORE # the suite's own database, whatever the caller's environment says
fi

_failures=0
_current_failed=0
_skipped=

fail() {
  echo "    FAIL: $*" >&2
  _current_failed=1
}

# expect_status EXPECTED COMMAND...: runs COMMAND, captures stdout/stderr in $OUT/$ERR.
expect_status() {
  local expected=$1
  shift
  OUT=$("$@" 2>"$TEST_DIR/stderr")
  STATUS=$?
  ERR=$(cat "$TEST_DIR/stderr")
  if [ "$STATUS" != "$expected" ]; then
    fail "expected status $expected, got $STATUS from: $* (stderr: $ERR)"
    return 1
  fi
  return 0
}

expect_eq() {
  local expected=$1 actual=$2 what=${3:-value}
  if [ "$expected" != "$actual" ]; then
    fail "$what: expected '$expected', got '$actual'"
    return 1
  fi
}

expect_contains() {
  local haystack=$1 needle=$2 what=${3:-output}
  case "$haystack" in
  *"$needle"*) return 0 ;;
  esac
  fail "$what does not contain '$needle': '$haystack'"
  return 1
}

expect_not_contains() {
  local haystack=$1 needle=$2 what=${3:-output}
  case "$haystack" in
  *"$needle"*)
    fail "$what contains '$needle'"
    return 1
    ;;
  esac
}

expect_true() {
  local what=$1
  shift
  if ! "$@"; then
    fail "$what"
    return 1
  fi
}

# Exactly one line on stderr.
expect_one_line() {
  local lines
  lines=$(printf '%s\n' "$ERR" | wc -l)
  if [ -z "$ERR" ] || [ "$lines" != 1 ]; then
    fail "expected one line on stderr, got: '$ERR'"
    return 1
  fi
}

# The algorithms the binary knows, in its own order, as the refusal of an unknown one lists
# them (from the one table in src/core/algorithm.cpp): suites that loop over the algorithms
# cover a new one without being told.
binary_algorithms() {
  "$RATELIMIT" --db /nonexistent/x.db try k -r 1/s -a '?' 2>&1 |
    sed -n 's/.*; expected one of //p' | tr -d ','
}

now_ms() { date +%s%3N; }

# Waits (up to 5 s, polling) until FILE, written by a process started in the background,
# is not empty; the caller's next step tells whether it came.
wait_for_file() {
  local tries=0
  while [ ! -s "$1" ] && [ $tries -lt 100 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
}

# start_api LOG ARGUMENTS...: tests/integration/stand_in_api.py on loopback, with ARGUMENTS
# (see its --help), logging to LOG, stopping itself after 120 s; sets API_PORT and API_PID.
# stop_api stops it.
start_api() {
  local log=$1
  shift
  rm -f port
  /usr/bin/python3 "$SUITE_DIR/stand_in_api.py" --port-file port --log "$log" --lifetime 120 "$@" &
  API_PID=$!
  wait_for_file port
  API_PORT=$(cat port)
}

stop_api() {
  kill "$API_PID" 2>/dev/null
  wait "$API_PID" 2>/dev/null
}

# Waits (up to 20 s, polling) until COUNT commands started in the background have each
# touched its `started.N` in the current directory.
wait_for_started() {
  local tries=0
  until [ "$(find . -name 'started.*' | wc -l)" -ge "$1" ] || [ $tries -ge 400 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
}

# The wall clock in microseconds, from bash itself (no process): the binary reads the same
# CLOCK_REALTIME.
now_us() {
  local t=$EPOCHREALTIME
  echo "${t/[.,]/}"
}

# A top-level JSON field's scalar value from a one-line object (numbers, booleans, simple
# strings): the first occurrence, which precedes any nested "limits" array.
json_field() {
  local json=$1 field=$2
  printf '%s\n' "$json" | sed -n "s/^[^{]*{\"$field\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p;
    s/^[^{]*{[^[]*[,{]\"$field\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" | head -n 1
}

# Runs COMMAND... every 100 ms until it succeeds, for at most 10 s; fails if it never does.
poll_for_10s() {
  local tries=0
  until "$@"; do
    [ $tries = 100 ] && return 1
    sleep 0.1
    tries=$((tries + 1))
  done
}

# KEY's next free slot, in milliseconds from now (empty when it has none).
next_slot_ms() {
  json_field "$("$RATELIMIT" --json status "$1")" retry_after_ms
}

# Whether KEY's next free slot is more than MS milliseconds away.
slot_beyond() {
  local retry
  retry=$(next_slot_ms "$1")
  [ "${retry:-0}" -gt "$2" ]
}

# Waits (up to 10 s) until KEY's next free slot is more than MS milliseconds away, as it is
# once a waiter started in the background has reserved its slot. Consumes nothing. Fails
# the test when the reservation does not come.
wait_for_reservation() {
  poll_for_10s slot_beyond "$1" "$2" && return 0
  local retry
  retry=$(next_slot_ms "$1")
  fail "no reservation on \"$1\" after 10 s: its next slot is ${retry:-?} ms away"
  return 1
}

# Checks that the shells and man find an installed ratelimit: the binary in BIN, the data
# files under SHARE (bash and fish completions by $XDG_DATA_DIRS), the zsh completion in
# the directory ZSH_DIR, the man page compressed in SHARE/man/man1.
expect_tools_find_installed() {
  local bin=$1 share=$2 zsh_dir=$3
  # The shells look for completions of the commands on $PATH.
  export PATH=$bin:$PATH
  expect_status 0 env XDG_DATA_DIRS="$share" bash --norc --noprofile -c \
    '. /usr/share/bash-completion/bash_completion && { _completion_loader ratelimit || :; } &&
     complete -p ratelimit'
  expect_contains "$OUT" "-F _ratelimit" "bash completion"
  expect_status 0 env XDG_DATA_DIRS="$share" HOME="$TEST_DIR" \
    XDG_CONFIG_HOME="$TEST_DIR/.config" fish -c 'complete -C "ratelimit try k -a sliding-l"'
  expect_contains "$OUT" "sliding-log" "fish completion"
  OUT=$(timeout 60 zsh -f "$SUITE_DIR/complete.zsh" "$zsh_dir" "ratelimit try k -a sliding-l")
  expect_eq "sliding-log" "$(sed '$d' <<<"$OUT")" "zsh completion"
  if command -v man >/dev/null; then
    expect_status 0 env MANPATH="$share/man" man -w ratelimit
    expect_eq "$share/man/man1/ratelimit.1.gz" "$OUT" "man -w"
  fi
}

# Runs the suite's tests: all of them, those whose name contains $TEST_FILTER, those named in
# $TEST_ONLY, or all but those named in $TEST_SKIP (names separated by spaces).
run_suite() {
  local passed=0 skipped=0 failed=0 name
  local filter=${TEST_FILTER:-} only=" ${TEST_ONLY:-} " skip=" ${TEST_SKIP:-} "
  for name in $(declare -F | awk '{print $3}' | grep '^test_'); do
    if [ -n "$filter" ] && [[ "$name" != *$filter* ]]; then
      continue
    fi
    if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then
      continue
    fi
    if [[ "$skip" == *" $name "* ]]; then
      continue
    fi
    TEST_DIR="$WORK_ROOT/$name"
    mkdir -p "$TEST_DIR"
    DB="$TEST_DIR/ratelimit.db"
    export RATELIMIT_DB="$DB"
    if [ "$STORE" = redis ]; then
      rcli FLUSHALL >/dev/null
    fi
    _current_failed=0
    local started
    started=$(now_ms)
    # Each test runs in a subshell; its failures come back as its exit status, a skip as 77
    # after the reason on stdout.
    (
      cd "$TEST_DIR" || exit 1
      "$name"
      if [ $_current_failed = 0 ] && [ -n "$_skipped" ]; then
        echo "  skip $name: $_skipped"
        exit 77
      fi
      exit $_current_failed
    )
    _current_failed=$?
    if [ $_current_failed = 77 ]; then
      skipped=$((skipped + 1))
      rm -rf "$TEST_DIR"
    elif [ $_current_failed = 0 ]; then
      passed=$((passed + 1))
      echo "  ok   $name ($(($(now_ms) - started)) ms)"
      rm -rf "$TEST_DIR"
    else
      failed=$((failed + 1))
      echo "  FAIL $name: data kept in $TEST_DIR"
    fi
  done
  echo "$SUITE_NAME: $passed passed, $skipped skipped, $failed failed"
  if [ $failed = 0 ]; then
    rm -rf "$WORK_ROOT"
    return 0
  fi
  return 1
}
