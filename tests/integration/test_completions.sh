#!/usr/bin/env bash
# The bash, zsh and fish completions, driven in each shell: commands, options of every
# command (against what --help lists), algorithm names, files, keys, and the command
# after `run ... --`.
. "$(dirname "$0")/lib.sh"
. "$SUITE_DIR/help_lib.sh"

SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)
COMPLETIONS=$SOURCE_DIR/completions
# Every algorithm the binary knows, in the order the completions offer them.
ALGORITHMS=$(binary_algorithms | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')

# `ratelimit` on PATH is the binary under test, as the completions call it by that name.
BIN_DIR=$WORK_ROOT/bin
mkdir -p "$BIN_DIR"
ln -sf "$RATELIMIT" "$BIN_DIR/ratelimit"
export PATH=$BIN_DIR:$PATH

# bash_complete LINE [without]: what bash completes at the end of LINE, sorted, one a line,
# with the bash-completion package loaded (or not, with `without`). The words are split
# as readline splits them: "=" is a word of its own.
bash_complete() {
  local line=$1 mode=${2:-with}
  # shellcheck disable=SC2016 # expanded by the inner bash
  bash --norc --noprofile -c '
    line=$1 mode=$2
    if [ "$mode" = with ]; then
      . /usr/share/bash-completion/bash_completion || exit 1
    fi
    . "$3" || exit 1
    function=$(complete -p ratelimit | sed -n "s/.*-F \([^ ]*\).*/\1/p")
    [ -n "$function" ] || { echo "no completion for ratelimit" >&2; exit 1; }
    read -ra COMP_WORDS <<<"${line//=/ = }"
    case $line in *" " | *=) COMP_WORDS+=("") ;; esac
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line COMP_POINT=${#line} COMP_TYPE=9 COMP_KEY=9
    "$function" ratelimit "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' bash "$line" "$mode" "$COMPLETIONS/ratelimit.bash" 2>"$TEST_DIR/complete.err" |
    sed '/^$/d' | sort -u
}

# fish_complete LINE: what fish completes at the end of LINE, sorted, one a line.
fish_complete() {
  # shellcheck disable=SC2016 # $argv is fish's
  HOME=$TEST_DIR XDG_CONFIG_HOME=$TEST_DIR/.config XDG_DATA_HOME=$TEST_DIR/.local/share \
    fish -c 'source $argv[1]; complete -C $argv[2]' "$COMPLETIONS/ratelimit.fish" "$1" \
    2>"$TEST_DIR/complete.err" |
    cut -f1 | sort -u
}

# zsh_complete LINE: what zsh completes at the end of LINE, typed on a terminal.
zsh_complete() {
  zsh_complete_each "$1" | sed '$d'
}

# SHELL_complete_each LINE...: the completions of each LINE, each list ended by a line `.`.
# zsh completes them all in one session: starting one costs seconds on a busy machine.
zsh_complete_each() {
  COMPLETE_DUMP=$WORK_ROOT/zcompdump HOME=$TEST_DIR \
    timeout 120 zsh -f "$SUITE_DIR/complete.zsh" "$COMPLETIONS" "$@" \
    2>"$TEST_DIR/complete.err"
}
bash_complete_each() {
  local line
  for line in "$@"; do
    bash_complete "$line"
    echo .
  done
}
fish_complete_each() {
  local line
  for line in "$@"; do
    fish_complete "$line"
    echo .
  done
}

# expect_offers SHELL LINE WORD...: completing LINE in SHELL offers every WORD.
expect_offers() {
  local shell=$1 line=$2 offered word
  shift 2
  offered=$("${shell}_complete" "$line")
  for word in "$@"; do
    grep -qxF -- "$word" <<<"$offered" ||
      fail "$shell: completing '$line' does not offer '$word' (offers: ${offered//$'\n'/ })"
  done
}

# expect_offers_exactly SHELL LINE WORDS: completing LINE offers WORDS and nothing else.
expect_offers_exactly() {
  local shell=$1 line=$2 expected=$3 offered
  offered=$("${shell}_complete" "$line" | tr '\n' ' ' | sed 's/ $//')
  expect_eq "$expected" "$offered" "$shell: completing '$line'"
}

# Every long option that --help lists, for every command, is offered after the command.
expect_every_option() {
  local shell=$1 command
  check_discovery || return
  local -a commands lines
  mapfile -t commands < <(help_commands)
  lines=("ratelimit --")
  for command in "${commands[@]}"; do
    lines+=("ratelimit $command --")
  done
  local -a offered
  local block='' word
  while IFS= read -r word; do
    if [ "$word" = . ]; then
      offered+=("$block")
      block=''
    else
      block+="$word"$'\n'
    fi
  done < <("${shell}_complete_each" "${lines[@]}")
  expect_eq "${#lines[@]}" "${#offered[@]}" "$shell: completed lines" || return
  local i option
  for i in "${!lines[@]}"; do
    command=${lines[i]#ratelimit }
    command=${command% --}
    for option in $(if [ "$i" = 0 ]; then help_long_options; else expected_options "$command"; fi); do
      grep -qxF -- "$option" <<<"${offered[i]}" ||
        fail "$shell: completing '${lines[i]}' does not offer $option"
    done
  done
}

# A stand-in for ratelimit that answers `status --json` with three keys and logs its calls.
fake_ratelimit() {
  mkdir -p fakebin
  cat >fakebin/ratelimit <<'FAKE'
#!/bin/sh
echo "$*" >>"$FAKE_CALLS"
case "$*" in
*"status --json"*)
  printf '%s\n' '[{"key":"api","algorithm":"token-bucket"},' \
    '{"key":"batch","algorithm":"fixed-window"},{"key":"odd\"key","algorithm":"sliding-log"}]'
  ;;
esac
FAKE
  chmod +x fakebin/ratelimit
  export PATH=$PWD/fakebin:$PATH FAKE_CALLS=$PWD/calls
  : >"$FAKE_CALLS"
}

# expect_no_keys SHELL LINE: completing LINE offers none of the fake's keys.
expect_no_keys() {
  local offered
  offered=$("${1}_complete" "$2")
  case $offered in *api* | *batch*) fail "$1: completing '$2' offers keys: ${offered//$'\n'/ }" ;; esac
}

# Keys come from the store the line names, and nothing runs when that database is missing.
expect_keys() {
  local shell=$1
  fake_ratelimit
  : >"$DB"
  expect_offers_exactly "$shell" "ratelimit try " "api batch"
  expect_offers_exactly "$shell" "ratelimit status b" "batch"
  expect_offers_exactly "$shell" "ratelimit reset api " "api batch"
  expect_no_keys "$shell" "ratelimit wait api "
  : >other.db
  expect_offers_exactly "$shell" "ratelimit --db other.db run a" "api"
  expect_contains "$(cat "$FAKE_CALLS")" "--db other.db" "the fake's arguments"
  : >"$FAKE_CALLS"
  # The TLS files of a rediss:// store go along with it, in either form.
  expect_offers_exactly "$shell" \
    "ratelimit --store rediss://h:6380 --store-ca ca.pem --store-cert=c.pem --store-key k.pem try b" \
    "batch"
  local status_call
  status_call=$(grep -- 'status --json' "$FAKE_CALLS")
  expect_contains "$status_call" "--store rediss://h:6380" "$shell: the store"
  expect_contains "$status_call" "--store-ca ca.pem" "$shell: the CA"
  expect_true "$shell: the certificate in '$status_call'" \
    grep -qE -- '--store-cert[= ]c\.pem' <<<"$status_call"
  expect_contains "$status_call" "--store-key k.pem" "$shell: the key"
  : >"$FAKE_CALLS"
  rm "$DB"
  expect_no_keys "$shell" "ratelimit --db missing.db try "
  expect_no_keys "$shell" "ratelimit try "
  # `limits --json` reads only the configuration files: it may run.
  expect_eq "" "$(grep -v '^limits --json$' "$FAKE_CALLS")" \
    "calls with a missing database (RATELIMIT_DB=$DB)"
}

# With the real binary: the named limits of the configuration files, from --config on the
# line, beside the keys in the store.
expect_named_limits() {
  local shell=$1
  printf '[limits.github]\nrate = "10/s"\n[limits.gist]\nrate = "1/s"\n' >named.toml
  expect_offers_exactly "$shell" "ratelimit --config named.toml try gi" "gist github"
  expect_offers_exactly "$shell" "ratelimit --config=named.toml run gith" "github"
  # zsh offers no key after a global option that follows the command name (--json, --db
  # alike): a limitation of its completion, not of the named limits.
  [ "$shell" = zsh ] || expect_offers_exactly "$shell" "ratelimit wait --config named.toml g" "gist github"
  rl try gizmo -r 5/s
  expect_offers_exactly "$shell" "ratelimit --config named.toml try gi" "gist github gizmo"
  expect_eq "" "$(cat "$TEST_DIR/complete.err")" "$shell: stderr of the key completion"
}

# With the real binary: its keys when it has `status`, else nothing and no message.
expect_real_keys() {
  local shell=$1
  rl try api-key -r 5/s
  local offered
  offered=$("${shell}_complete" "ratelimit try api-")
  if help_commands | grep -qx status; then
    expect_eq "api-key" "$offered" "$shell: keys of the real store"
  else
    expect_eq "" "$offered" "$shell: keys without a status command"
  fi
  expect_eq "" "$(cat "$TEST_DIR/complete.err")" "$shell: stderr of the key completion"
}

# --- bash ---

test_bash_completes_commands() {
  # shellcheck disable=SC2046 # one command a word
  expect_offers bash "ratelimit " $(help_commands)
  expect_offers_exactly bash "ratelimit s" "simulate status"
  expect_offers_exactly bash "ratelimit --db x.db w" "wait"
}

test_bash_completes_the_options_of_try() {
  expect_offers bash "ratelimit try -" -r --rate -a --algorithm -b --burst -c --cost --db -q --json
}

test_bash_completes_every_option_of_every_command() { expect_every_option bash; }

test_bash_completes_algorithm_names() {
  expect_offers_exactly bash "ratelimit try k -a " "$ALGORITHMS"
  expect_offers_exactly bash "ratelimit wait k --algorithm sl" "sliding-log sliding-window"
  expect_offers_exactly bash "ratelimit try k --algorithm=l" "leaky-bucket"
  expect_offers_exactly bash "ratelimit simulate -r 5/s -a " "all $ALGORITHMS"
}

test_bash_completes_without_the_bash_completion_package() {
  expect_eq "$ALGORITHMS" "$(bash_complete "ratelimit try k -a " without | tr '\n' ' ' | sed 's/ $//')" \
    "algorithms"
  expect_eq "leaky-bucket" "$(bash_complete "ratelimit try k --algorithm=l" without)" "after ="
  expect_eq "wait" "$(bash_complete "ratelimit --db=x.db w" without)" "command after --db=x.db"
  expect_eq "echo" "$(bash_complete "ratelimit run k -r 1/s -- ech" without)" "command after --"
}

test_bash_completes_files_after_db() {
  mkdir dir && touch state.db
  expect_offers_exactly bash "ratelimit --db st" "state.db"
  expect_offers bash "ratelimit --db " state.db dir
}

test_bash_completes_values_of_other_options() {
  expect_offers_exactly bash "ratelimit --on-store-error " "allow deny local"
  expect_offers_exactly bash "ratelimit simulate --profile b" "boundary burst"
  expect_offers_exactly bash "ratelimit simulate --format " "csv json table"
  expect_offers_exactly bash "ratelimit try k -r " ""
}

test_bash_completes_the_command_after_run() {
  expect_offers_exactly bash "ratelimit run k -r 1/s " "--"
  expect_offers bash "ratelimit run k -r 1/s -- ech" echo
  # The command's own completion takes over for its arguments.
  expect_offers bash "ratelimit run k -- ratelimit try j -a " token-bucket
}

test_bash_completes_keys() { expect_keys bash; }
test_bash_completes_keys_of_the_real_store() { expect_real_keys bash; }
test_bash_completes_named_limits() { expect_named_limits bash; }

# --- fish ---

test_fish_completes_commands() {
  # shellcheck disable=SC2046
  expect_offers fish "ratelimit " $(help_commands)
  expect_offers_exactly fish "ratelimit s" "simulate status"
  expect_offers_exactly fish "ratelimit --db x.db w" "wait"
}

test_fish_completes_the_options_of_try() {
  expect_offers fish "ratelimit try -" -r -a -b -c -q
  expect_offers fish "ratelimit try --" --rate --algorithm --burst --cost --db --json
}

test_fish_completes_every_option_of_every_command() { expect_every_option fish; }

test_fish_completes_algorithm_names() {
  expect_offers_exactly fish "ratelimit try k -a " "$ALGORITHMS"
  expect_offers_exactly fish "ratelimit wait k --algorithm sl" "sliding-log sliding-window"
  expect_offers_exactly fish "ratelimit simulate -r 5/s -a " "all $ALGORITHMS"
}

test_fish_completes_files_after_db() {
  touch state.db
  expect_offers_exactly fish "ratelimit --db st" "state.db"
}

test_fish_completes_the_command_after_run() {
  expect_offers_exactly fish "ratelimit run k -r 1/s " "--"
  expect_offers fish "ratelimit run k -r 1/s -- ech" echo
  expect_offers fish "ratelimit run k -- ratelimit try j -a " token-bucket
}

test_fish_completes_keys() { expect_keys fish; }
test_fish_completes_keys_of_the_real_store() { expect_real_keys fish; }
test_fish_completes_named_limits() { expect_named_limits fish; }

# --- zsh ---

test_zsh_script_parses() {
  expect_status 0 zsh -n "$COMPLETIONS/_ratelimit"
}

test_zsh_completes_commands() {
  # shellcheck disable=SC2046
  expect_offers zsh "ratelimit " $(help_commands)
  expect_offers_exactly zsh "ratelimit s" "simulate status"
}

test_zsh_completes_the_options_of_try() {
  expect_offers zsh "ratelimit try -" -r --rate -a --algorithm -b --burst -c --cost --db --json
}

test_zsh_completes_every_option_of_every_command() { expect_every_option zsh; }

test_zsh_completes_algorithm_names() {
  expect_offers_exactly zsh "ratelimit try k -a " "$ALGORITHMS"
  expect_offers_exactly zsh "ratelimit simulate -r 5/s -a " "all $ALGORITHMS"
}

test_zsh_completes_files_after_db() {
  touch state.db
  expect_offers_exactly zsh "ratelimit --db st" "state.db"
}

test_zsh_completes_the_command_after_run() {
  expect_offers_exactly zsh "ratelimit run k -r 1/s " "--"
  expect_offers zsh "ratelimit run k -r 1/s -- ech" echo
  expect_offers zsh "ratelimit run k -- ratelimit try j -a " token-bucket
}

test_zsh_completes_keys() { expect_keys zsh; }
test_zsh_completes_keys_of_the_real_store() { expect_real_keys zsh; }
test_zsh_completes_named_limits() { expect_named_limits zsh; }

run_suite
