#!/usr/bin/env bash
# Named limits in configuration files (limits.toml): try, wait and run without -r, options
# that override the file, the order of the files, [store] url, timeout and on_error,
# `limits`, and errors.
. "$(dirname "$0")/lib.sh"

# The binary with the configuration files of the test directory only: HOME, XDG_CONFIG_HOME
# and the system file ($RATELIMIT_SYSTEM_CONFIG) are in it, and $RATELIMIT_CONFIG is unset.
rlc() {
  env -u RATELIMIT_CONFIG HOME="$TEST_DIR/home" XDG_CONFIG_HOME="$TEST_DIR/home/.config" \
    RATELIMIT_SYSTEM_CONFIG="$TEST_DIR/etc/limits.toml" "$RATELIMIT" "$@"
}

# user_file / system_file: writes standard input to the user's / the system's file.
user_file() {
  mkdir -p "$TEST_DIR/home/.config/ratelimit"
  cat >"$TEST_DIR/home/.config/ratelimit/limits.toml"
}
system_file() {
  mkdir -p "$TEST_DIR/etc"
  cat >"$TEST_DIR/etc/limits.toml"
}

test_a_named_limit_is_used_by_try_wait_and_run() {
  user_file <<'TOML'
[limits.github]
rate = ["2/min", "100/h"]
algorithm = "sliding-log"
TOML
  expect_status 0 rlc try github || return
  expect_status 0 rlc wait github || return
  expect_status 1 rlc try github || return
  expect_status 1 rlc run github --no-wait echo ran || return
  expect_status 0 rlc status github --json || return
  expect_contains "$OUT" '"algorithm":"sliding-log"'
}

test_run_takes_the_word_after_a_named_key_as_the_command() {
  user_file <<'TOML'
[limits.github]
rate = "5/s"
TOML
  expect_status 0 rlc run github echo -r 1/s hello || return
  expect_eq "-r 1/s hello" "$OUT" "the command's output, its -r its own"
  expect_status 0 rlc run github -- printf '%s\n' -n || return
  expect_eq "-n" "$OUT"
}

test_pipe_takes_a_named_limit() {
  user_file <<'TOML'
[limits.lines]
rate = "100/s"
TOML
  expect_status 0 rlc pipe lines < <(printf 'a\nb\n') || return
  expect_eq $'a\nb' "$OUT"
}

test_options_override_the_file() {
  user_file <<'TOML'
[limits.api]
rate = "1/min"
burst = 3
timeout = "10s"
TOML
  expect_status 0 rlc try api -c 3 || return
  expect_status 1 rlc try api || return
  # -r replaces the file's limit altogether.
  expect_status 0 rlc try other -r 1/min
  # An -a that takes no burst drops the file's burst rather than failing on it.
  expect_status 0 rlc try api2 -r 1/min
  expect_status 0 rlc try fresh -r 1/min -a fixed-window || return
  user_file <<'TOML'
[limits.win]
rate = "2/min"
burst = 5
TOML
  expect_status 0 rlc try win -a fixed-window || return
  expect_status 0 rlc status win --json || return
  expect_contains "$OUT" '"algorithm":"fixed-window"'
  # The command line's timeout wins over the file's.
  user_file <<'TOML'
[limits.slow]
rate = "1/h"
timeout = "1h"
TOML
  expect_status 0 rlc try slow || return
  expect_status 1 rlc wait slow -t 0.1s
}

test_the_user_file_wins_over_the_system_file() {
  user_file <<'TOML'
[limits.shared]
rate = "1/min"
TOML
  system_file <<'TOML'
[limits.shared]
rate = "100/min"
[limits.system-only]
rate = "1/min"
TOML
  expect_status 0 rlc try shared || return
  expect_status 1 rlc try shared || return
  expect_status 0 rlc try system-only || return
  expect_status 1 rlc try system-only
}

test_config_and_environment_name_one_file_alone() {
  user_file <<'TOML'
[limits.k]
rate = "100/min"
TOML
  cat >only.toml <<'TOML'
[limits.k]
rate = "1/min"
TOML
  cat >env.toml <<'TOML'
[limits.e]
rate = "1/min"
TOML
  expect_status 0 rlc --config only.toml try k || return
  expect_status 1 rlc --config only.toml try k || return
  # RATELIMIT_CONFIG alone: the user's k is not defined there.
  expect_status 2 env RATELIMIT_CONFIG=env.toml HOME="$TEST_DIR/home" "$RATELIMIT" try k || return
  expect_status 0 env RATELIMIT_CONFIG=env.toml "$RATELIMIT" try e || return
  # --config wins over RATELIMIT_CONFIG.
  expect_status 1 env RATELIMIT_CONFIG=env.toml "$RATELIMIT" --config only.toml try k
}

test_a_missing_config_file_is_an_error() {
  expect_status 2 rlc --config nowhere.toml try k || return
  expect_one_line
  expect_contains "$ERR" "nowhere.toml"
  expect_status 2 env RATELIMIT_CONFIG=nowhere.toml "$RATELIMIT" try k || return
  expect_one_line
  # The default files may be missing.
  expect_status 0 rlc try k -r 1/s
}

# expect_parse_error LINE NEEDLE: the file (on stdin) makes `try k` fail with exit 2 and
# one line `FILE:LINE: ...` naming NEEDLE.
expect_parse_error() {
  cat >bad.toml
  expect_status 2 rlc --config bad.toml try k || return
  expect_one_line || return
  expect_contains "$ERR" "bad.toml:$1: " || return
  expect_contains "$ERR" "$2"
}

test_parse_errors_name_the_file_and_line() {
  expect_parse_error 3 "" < <(printf '[limits.k]\nrate = "1/s"\nburst = \n') || return
  expect_parse_error 4 'colour' < <(printf '# c\n[limits.k]\nrate = "1/s"\ncolour = "red"\n') || return
  expect_parse_error 3 'ten/s' < <(printf '[limits.k]\n\nrate = "ten/s"\n') || return
  expect_parse_error 2 'rate takes' < <(printf '[limits.k]\nrate = 10\n') || return
  expect_parse_error 3 'cost takes' < <(printf '[limits.k]\nrate = "1/s"\ncost = "2"\n') || return
  expect_parse_error 3 'timeout takes' < <(printf '[limits.k]\nrate = "1/s"\ntimeout = 5\n') || return
  expect_parse_error 1 'burst' < <(printf '[limits.k]\nrate = "1/s"\nalgorithm = "fixed-window"\nburst = 4\n') || return
  expect_parse_error 1 'no rate' < <(printf '[limits.k]\nalgorithm = "leaky-bucket"\n') || return
  expect_parse_error 3 'colour' < <(printf '[limits."a\\nb"]\nrate = "1/s"\ncolour = 1\n') || return
  expect_parse_error 2 'url' < <(printf '[store]\nurl = 5\n') || return
  expect_parse_error 1 'unknown table' < <(printf '[other]\n')
}

test_an_empty_file_defines_nothing() {
  : >empty.toml
  expect_status 0 rlc --config empty.toml limits || return
  expect_eq "" "$OUT"
  expect_status 2 rlc --config empty.toml try k
}

test_an_unreadable_file_is_an_error() {
  [ "$(id -u)" != 0 ] || {
    skip "root reads every file"
    return 0
  }
  printf '[limits.k]\nrate = "1/s"\n' >locked.toml
  chmod 000 locked.toml
  expect_status 2 rlc --config locked.toml try k || return
  expect_one_line
  expect_contains "$ERR" "locked.toml"
}

test_a_key_without_rate_or_definition_names_both_ways() {
  expect_status 2 rlc try undefined || return
  expect_one_line
  expect_contains "$ERR" "-r N/PERIOD"
  expect_contains "$ERR" "[limits.undefined]"
  expect_contains "$ERR" "$TEST_DIR/home/.config/ratelimit/limits.toml"
  expect_status 2 rlc try 'with space' || return
  expect_one_line
  expect_contains "$ERR" '[limits."with space"]'
}

test_a_name_with_spaces_and_quotes() {
  user_file <<'TOML'
[limits.'a "b" c']
rate = "1/min"
TOML
  expect_status 0 rlc try 'a "b" c' || return
  expect_status 1 rlc try 'a "b" c'
}

test_store_url_from_the_file() {
  on_store sqlite || return 0
  user_file <<TOML
[store]
url = "sqlite:$TEST_DIR/from-config.db"
[limits.k]
rate = "1/min"
TOML
  expect_status 0 env -u RATELIMIT_DB -u RATELIMIT_STORE HOME="$TEST_DIR/home" \
    XDG_CONFIG_HOME="$TEST_DIR/home/.config" RATELIMIT_SYSTEM_CONFIG=/nonexistent \
    "$RATELIMIT" try k || return
  expect_true "the file's store is used" test -f from-config.db
  # --db wins over the file.
  expect_status 0 env -u RATELIMIT_DB -u RATELIMIT_STORE HOME="$TEST_DIR/home" \
    XDG_CONFIG_HOME="$TEST_DIR/home/.config" "$RATELIMIT" --db other.db try k || return
  expect_true "--db is used" test -f other.db
}

# Starts a server on loopback that accepts connections and never answers; its port in
# $SILENT_PORT, its PID in $SILENT_PID (stop_silent_server stops it).
start_silent_server() {
  /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
time.sleep(120)' >silent.port &
  SILENT_PID=$!
  wait_for_file silent.port
  SILENT_PORT=$(cat silent.port)
}
stop_silent_server() {
  kill "$SILENT_PID" 2>/dev/null
  wait "$SILENT_PID" 2>/dev/null
}

test_store_timeout_and_on_error_from_the_file() {
  start_silent_server
  user_file <<TOML
[store]
url = "redis://127.0.0.1:$SILENT_PORT"
timeout = "300ms"
TOML
  local -a env=(env -u RATELIMIT_DB -u RATELIMIT_STORE -u RATELIMIT_CONFIG HOME="$TEST_DIR/home"
    XDG_CONFIG_HOME="$TEST_DIR/home/.config" RATELIMIT_SYSTEM_CONFIG=/nonexistent)
  expect_status 3 "${env[@]}" "$RATELIMIT" try k -r 1/s
  expect_contains "$ERR" "no answer within 0.3s (--store-timeout)"
  # The command line wins over the file.
  expect_status 3 "${env[@]}" "$RATELIMIT" --store-timeout 0.5s try k -r 1/s
  expect_contains "$ERR" "no answer within 0.5s (--store-timeout)"
  printf 'on_error = "allow"\n' >>home/.config/ratelimit/limits.toml
  expect_status 0 "${env[@]}" "$RATELIMIT" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: warning: "
  expect_contains "$ERR" "going on without the store (--on-store-error=allow)"
  expect_status 3 "${env[@]}" "$RATELIMIT" --on-store-error=deny try k -r 1/s
  # A store named in the environment takes nothing from the file's [store]: the timeout and
  # what to do on an error are the defaults, or the options'.
  expect_status 3 "${env[@]}" RATELIMIT_STORE="redis://127.0.0.1:$SILENT_PORT" \
    "$RATELIMIT" try k -r 1/s
  expect_contains "$ERR" "no answer within 1s (--store-timeout)"
  expect_status 0 "${env[@]}" RATELIMIT_STORE="redis://127.0.0.1:$SILENT_PORT" \
    "$RATELIMIT" --on-store-error allow --store-timeout 200ms try k -r 1/s
  expect_contains "$ERR" "no answer within 0.2s (--store-timeout)"
  stop_silent_server
}

test_store_settings_are_checked_as_their_options() {
  # A named limit: the file is read, whatever names the store.
  user_file <<'TOML'
[store]
on_error = "ignore"
[limits.k]
rate = "1/s"
TOML
  expect_status 2 rlc try k
  expect_one_line
  expect_contains "$ERR" 'limits.toml:2: on_error takes deny, allow or local, e.g. on_error = "local"'
  user_file <<'TOML'
[store]
timeout = "forever"
[limits.k]
rate = "1/s"
TOML
  expect_status 2 rlc try k
  expect_one_line
  expect_contains "$ERR" 'limits.toml:2: timeout: '
}

test_limits_lists_the_named_limits() {
  user_file <<'TOML'
[limits.github]
rate = ["10/s", "5000/h"]
algorithm = "sliding-log"
[limits."nightly sync"]
rate = "2/h"
burst = 1
cost = 1
timeout = "30s"
TOML
  expect_status 0 rlc limits || return
  expect_contains "$OUT" $'github\t-r 10/s -r 5000/h -a sliding-log\t'
  expect_contains "$OUT" $'\'nightly sync\'\t-r 2/h -b 1 -c 1 -t 30s\t'
  expect_status 0 rlc limits --json || return
  expect_contains "$OUT" '{"name":"github","rates":["10/s","5000/h"],"algorithm":"sliding-log"'
  expect_contains "$OUT" '"name":"nightly sync"'
  expect_contains "$OUT" '"timeout":"30s"'
  expect_status 0 rlc --json limits || return
  expect_contains "$OUT" '"name":"github"'
}



# `try` with -r and a store on the command line or in the environment opens no
# configuration file; on the default path it tries at most the user's and the system's.
test_try_with_a_rate_and_a_store_reads_no_configuration() {
  command -v strace >/dev/null || {
    skip "no strace"
    return 0
  }
  user_file <<'TOML'
[limits.k]
rate = "1/s"
TOML
  strace -f -e trace=open,openat -o trace1 env -u RATELIMIT_DB HOME="$TEST_DIR/home" \
    "$RATELIMIT" --db "$DB" try k -r 1/s >/dev/null 2>&1
  expect_eq "" "$(grep -F limits.toml trace1)" "configuration files opened with --db"
  strace -f -e trace=open,openat -o trace2 env RATELIMIT_DB="$DB" HOME="$TEST_DIR/home" \
    "$RATELIMIT" try k -r 1/s >/dev/null 2>&1
  expect_eq "" "$(grep -F limits.toml trace2)" "configuration files opened with RATELIMIT_DB"
  strace -f -e trace=open,openat -o trace3 env RATELIMIT_STORE="sqlite:$DB" \
    HOME="$TEST_DIR/home" "$RATELIMIT" try k -r 1/s >/dev/null 2>&1
  expect_eq "" "$(grep -F limits.toml trace3)" "configuration files opened with RATELIMIT_STORE"
  # Nor when the store fails and --on-store-error is not given: the [store] of a file
  # describes the store the file names.
  printf 'not a database\n' >foreign.db
  strace -f -e trace=open,openat -o trace5 env -u RATELIMIT_DB HOME="$TEST_DIR/home" \
    "$RATELIMIT" --db foreign.db try k -r 1/s >/dev/null 2>&1
  expect_eq "" "$(grep -F limits.toml trace5)" "configuration files opened for a failing store"
  rm -r home
  strace -f -e trace=open,openat -o trace4 env -u RATELIMIT_DB -u RATELIMIT_STORE \
    -u RATELIMIT_CONFIG HOME="$TEST_DIR/home" XDG_CONFIG_HOME="$TEST_DIR/home/.config" \
    RATELIMIT_SYSTEM_CONFIG="$TEST_DIR/etc/limits.toml" "$RATELIMIT" try k -r 1/s >/dev/null 2>&1
  # Besides the database, which this call creates.
  expect_eq 2 "$(grep -F "$TEST_DIR" trace4 | grep -v ratelimit.db | grep -c ENOENT)" \
    "failed opens of configuration files on the default path"
}
run_suite
