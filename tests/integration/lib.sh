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

rl() { "$RATELIMIT" "$@"; }

_failures=0
_current_failed=0

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

now_ms() { date +%s%3N; }

# A top-level JSON field's scalar value from a one-line object (numbers, booleans, simple
# strings): the first occurrence, which precedes any nested "limits" array.
json_field() {
  local json=$1 field=$2
  printf '%s\n' "$json" | sed -n "s/^{\"$field\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p;
    s/^{[^[]*[,{]\"$field\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" | head -n 1
}

run_suite() {
  local passed=0 failed=0 name
  local filter=${TEST_FILTER:-}
  for name in $(declare -F | awk '{print $3}' | grep '^test_'); do
    if [ -n "$filter" ] && [[ "$name" != *$filter* ]]; then
      continue
    fi
    TEST_DIR="$WORK_ROOT/$name"
    mkdir -p "$TEST_DIR"
    DB="$TEST_DIR/ratelimit.db"
    export RATELIMIT_DB="$DB"
    _current_failed=0
    local started
    started=$(now_ms)
    # Each test runs in a subshell; its failures come back as its exit status.
    (
      cd "$TEST_DIR" || exit 1
      "$name"
      exit $_current_failed
    )
    _current_failed=$?
    if [ $_current_failed = 0 ]; then
      passed=$((passed + 1))
      echo "  ok   $name ($(($(now_ms) - started)) ms)"
      rm -rf "$TEST_DIR"
    else
      failed=$((failed + 1))
      echo "  FAIL $name: data kept in $TEST_DIR"
    fi
  done
  echo "$SUITE_NAME: $passed passed, $failed failed"
  if [ $failed = 0 ]; then
    rm -rf "$WORK_ROOT"
    return 0
  fi
  return 1
}
