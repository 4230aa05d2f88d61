#!/usr/bin/env bash
# The database's files: names that are only names, modes that follow the umask, the default
# directory's place and mode, and commands that read creating nothing.
. "$(dirname "$0")/lib.sh"

# Runs the binary with the default database: no RATELIMIT_DB, HOME=$1, XDG_STATE_HOME=$2
# (empty: unset).
rl_default() {
  local home=$1 state=$2
  shift 2
  if [ -n "$state" ]; then
    env -u RATELIMIT_DB HOME="$home" XDG_STATE_HOME="$state" "$RATELIMIT" "$@"
  else
    env -u RATELIMIT_DB -u XDG_STATE_HOME HOME="$home" "$RATELIMIT" "$@"
  fi
}

mode() { stat -c %a "$1"; }

no_scratch_files() { ! ls -a | grep -q '\.new-'; }

test_an_empty_db_is_a_usage_error() {
  on_store sqlite || return 0
  mkdir home
  expect_status 2 rl_default "$PWD/home" "" --db "" try k -r 1/s || return
  expect_one_line
  expect_contains "$ERR" "--db"
  expect_true "nothing created in HOME" test -z "$(ls -A home)"
  expect_status 2 rl_default "$PWD/home" "" --db= status
}

test_uri_like_names_are_file_names() {
  on_store sqlite || return 0
  expect_status 0 rl --db file:foo.db try k -r 1/min || return
  expect_status 1 rl --db file:foo.db try k -r 1/min
  expect_true "the file is named file:foo.db" test -f file:foo.db
  expect_true "no foo.db" test ! -e foo.db
  expect_true "no scratch file left" no_scratch_files
  expect_status 0 rl --db "file:bar.db?mode=memory" try k -r 1/min
  expect_true "the file is named as given" test -f "file:bar.db?mode=memory"
  expect_true "no scratch file left" no_scratch_files
}

test_memory_is_a_file_name() {
  on_store sqlite || return 0
  # In memory, the second call would be granted: nothing would be shared.
  expect_status 0 rl --db :memory: try k -r 1/min || return
  expect_status 1 rl --db :memory: try k -r 1/min
  expect_true "the file is named :memory:" test -f :memory:
  expect_status 0 rl --store sqlite::memory: status k
  expect_true "no scratch file left" no_scratch_files
}

test_a_failed_creation_leaves_no_scratch_file() {
  on_store sqlite || return 0
  mkdir ro
  chmod 555 ro
  if touch ro/probe 2>/dev/null; then
    rm -f ro/probe
    skip "running as a user who writes in a read-only directory"
    return 0
  fi
  expect_status 3 rl --db ro/x.db try k -r 1/s
  expect_true "no scratch file left" sh -c '! ls -a ro | grep -q new-'
  expect_status 3 rl --db file:ro/x.db try k -r 1/s
  expect_true "no scratch file left" no_scratch_files
}

test_new_files_follow_the_umask() {
  on_store sqlite || return 0
  (umask 002 && rl --db shared.db try k -r 1/s) || fail "try with umask 002"
  expect_eq 664 "$(mode shared.db)" "database mode with umask 002"
  expect_eq 664 "$(mode shared.db-wal)" "-wal mode with umask 002"
  expect_eq 664 "$(mode shared.db-shm)" "-shm mode with umask 002"
  (umask 027 && rl --db group.db try k -r 1/s) || fail "try with umask 027"
  expect_eq 640 "$(mode group.db)" "database mode with umask 027"
  expect_eq 640 "$(mode group.db-wal)" "-wal mode with umask 027"
  (umask 077 && rl --db own.db try k -r 1/s) || fail "try with umask 077"
  expect_eq 600 "$(mode own.db)" "database mode with umask 077"
  # Directories made for a given path, as mkdir -p makes them.
  (umask 002 && rl --db team/limits/x.db try k -r 1/s) || fail "try in new directories"
  expect_eq 775 "$(mode team)" "a directory made with umask 002"
  expect_eq 775 "$(mode team/limits)" "a directory made with umask 002"
}

test_a_group_shares_a_database_in_a_setgid_directory() {
  on_store sqlite || return 0
  mkdir shared
  chmod 2775 shared
  (umask 002 && rl --db shared/r.db try k -r 1/s) || fail "try with umask 002"
  expect_eq 664 "$(mode shared/r.db)" "database mode"
  expect_eq "$(stat -c %g shared)" "$(stat -c %g shared/r.db)" "the directory's group"
}

test_the_default_directory_is_private() {
  on_store sqlite || return 0
  mkdir home
  (umask 022 && rl_default "$PWD/home" "" try k -r 1/s) || fail "try with the default database"
  expect_true "the database is in ~/.local/state/ratelimit" \
    test -f home/.local/state/ratelimit/ratelimit.db
  expect_eq 700 "$(mode home/.local/state/ratelimit)" "the state directory's mode"
  expect_eq 755 "$(mode home/.local)" "a parent's mode (umask 022)"
  expect_eq 755 "$(mode home/.local/state)" "a parent's mode (umask 022)"
  (umask 022 && rl_default "$PWD/home" "$PWD/state" try k -r 1/s) || fail "try with XDG_STATE_HOME"
  expect_true "the database is in \$XDG_STATE_HOME/ratelimit" test -f state/ratelimit/ratelimit.db
  expect_eq 700 "$(mode state/ratelimit)" "the state directory's mode"
}

test_an_existing_default_directory_keeps_its_mode() {
  on_store sqlite || return 0
  mkdir -p home/.local/state/ratelimit
  chmod 750 home/.local/state/ratelimit
  rl_default "$PWD/home" "" try k -r 1/s || fail "try with the default database"
  expect_eq 750 "$(mode home/.local/state/ratelimit)" "a directory the user made"
}

test_a_missing_home_is_never_created() {
  on_store sqlite || return 0
  expect_status 3 rl_default "$PWD/gone" "" try k -r 1/s || return
  expect_one_line
  expect_contains "$ERR" "--db"
  expect_contains "$ERR" "RATELIMIT_DB"
  expect_true "HOME not created" test ! -e gone
  # A command that creates nothing has nothing to say about it.
  expect_status 0 rl_default "$PWD/gone" "" status
  expect_true "HOME not created by status" test ! -e gone
}

test_reading_commands_create_nothing() {
  on_store sqlite || return 0
  local command
  for command in "status" "--json status" "reset k" "reset --all" "--json reset k" "gc" \
    "--json gc"; do
    # shellcheck disable=SC2086 # the words of the command
    expect_status 0 rl --db sub/x.db $command || continue
    expect_true "nothing created by $command" test ! -e sub
  done
  expect_status 0 rl --db none.db --json status
  expect_eq "[]" "$OUT" "status of a database that does not exist"
  expect_status 0 rl --db none.db --json reset --all
  expect_eq '{"removed":0}' "$OUT" "reset of a database that does not exist"
  expect_status 0 rl --db none.db --json gc
  expect_eq '{"removed":0,"keys":[]}' "$OUT" "gc of a database that does not exist"
  # A key asked for by name is unknown, as in any database without it.
  expect_status 1 rl --db none.db status k
  expect_true "nothing created" test ! -e none.db
  mkdir home
  expect_status 0 rl_default "$PWD/home" "" status
  expect_status 0 rl_default "$PWD/home" "" gc
  expect_true "nothing created in HOME" test -z "$(ls -A home)"
}

run_suite
