#!/usr/bin/env bash
# The man page: it lints clean, and documents every command, option and exit status that
# the binary has. Also --help and --version.
. "$(dirname "$0")/lib.sh"
. "$SUITE_DIR/help_lib.sh"

SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)
MAN_PAGE=$SOURCE_DIR/man/ratelimit.1

# The man page as text: hyphens as typed, without the overstrike of bold and underline.
rendered_man_page() {
  mandoc -T ascii "$MAN_PAGE" | sed $'s/.\b//g'
}

# The long options that `ratelimit [COMMAND] --help` lists (every command's and the
# global ones) without an entry of their own in the man page: a line that starts with
# the option, after its short form if any.
undocumented_options() {
  local text command option
  text=$(rendered_man_page)
  for command in '' $(help_commands); do
    # shellcheck disable=SC2086 # no word at all for the global options
    for option in $(help_long_options $command); do
      if ! grep -qE -- "^ +(-[A-Za-z0-9], )?$option([^-A-Za-z0-9]|\$)" <<<"$text"; then
        echo "${command:-(global)} $option"
      fi
    done
  done
}

test_man_page_lints_clean_with_groff() {
  expect_status 0 groff -man -ww -z "$MAN_PAGE"
  expect_eq "" "$ERR" "groff warnings"
}

test_man_page_lints_clean_with_mandoc() {
  expect_status 0 mandoc -T lint "$MAN_PAGE"
  expect_eq "" "$OUT$ERR" "mandoc messages"
}

test_man_page_has_every_section() {
  local text section
  text=$(rendered_man_page)
  for section in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS 'EXIT STATUS' ENVIRONMENT FILES \
    EXAMPLES 'SEE ALSO'; do
    grep -qx -- "$section" <<<"$text" || fail "no $section section"
  done
  expect_contains "$text" "flock(1), timeout(1), xargs(1)" "SEE ALSO"
}

test_man_page_documents_every_option() {
  check_discovery || return
  local missing
  missing=$(undocumented_options)
  expect_eq "" "$missing" "options that --help lists but the man page does not document"
}

test_man_page_has_an_entry_for_every_command() {
  check_discovery || return
  local text command
  text=$(rendered_man_page | sed -n '/^COMMANDS$/,/^OPTIONS$/p')
  for command in $(help_commands); do
    grep -qE "^       $command( |\$)" <<<"$text" || fail "no entry for $command under COMMANDS"
  done
}

# The drift check itself must catch an option that --help lists and the man page lacks.
test_an_undocumented_option_fails_the_drift_check() {
  local real=$RATELIMIT
  cat >fake-ratelimit <<FAKE
#!/usr/bin/env bash
"$real" "\$@"
status=\$?
if [ "\$*" = "try --help" ]; then
  echo "  --frobnicate                Undocumented"
fi
exit \$status
FAKE
  chmod +x fake-ratelimit
  local missing
  missing=$(RATELIMIT=$PWD/fake-ratelimit undocumented_options)
  expect_eq "try --frobnicate" "$missing" "what the drift check reports"
}

test_man_page_documents_every_exit_status() {
  local text status
  text=$(rendered_man_page | sed -n '/^EXIT STATUS$/,/^ENVIRONMENT$/p')
  local statuses
  statuses=$(sed -nE 's/.*k_exit_[a-z_]+ = ([0-9]+);.*/\1/p' "$SOURCE_DIR/src/cli/exit_status.hpp")
  expect_contains "$statuses" "127" "statuses found in exit_status.hpp" || return
  for status in $statuses 128+N; do
    grep -qE "^       ${status/+/\\+}( |\$)" <<<"$text" || fail "no entry for status $status"
  done
}

test_man_page_version_is_the_binary_s() {
  local version
  version=$("$RATELIMIT" --version | awk '{ print $2 }')
  expect_contains "$(grep '^\.TH' "$MAN_PAGE")" "\"ratelimit $version\"" ".TH line"
}

test_man_page_documents_the_environment() {
  local text variable
  text=$(rendered_man_page | sed -n '/^ENVIRONMENT$/,/^FILES$/p')
  for variable in RATELIMIT_DB XDG_STATE_HOME HOME RATELIMIT_STORE; do
    grep -qE "^       $variable( |\$)" <<<"$text" || fail "no entry for $variable"
  done
}

test_every_help_has_an_example() {
  check_discovery || return
  local command
  for command in '' $(help_commands); do
    # shellcheck disable=SC2086 # no word at all for ratelimit --help
    expect_status 0 rl $command --help || continue
    expect_contains "$OUT" "Example" "ratelimit $command --help"
  done
}

test_version_names_the_stores() {
  expect_status 0 rl --version
  local form='^ratelimit [0-9]+\.[0-9]+\.[0-9]+ \(stores: ([a-z]+, )*sqlite(, [a-z]+)*\)$'
  [[ $OUT =~ $form ]] || fail "unexpected --version: '$OUT'"
}

# The store URL form that a malformed URL's message names (the ACL user included) is the
# one that --help, the man page and the README give.
test_store_url_form_is_the_same_everywhere() {
  expect_status 2 rl --store redis:/x try k -r 1/s
  local form=${ERR##*expected }
  form=${form%% or sqlite:PATH}
  expect_eq 'redis://[[user]:password@]host[:port][/db]' "$form" "form in the message"
  expect_contains "$(rl --help)" "$form" "ratelimit --help"
  expect_contains "$(rendered_man_page)" "$form" "the man page"
  expect_contains "$(cat "$SOURCE_DIR/README.md")" "\`$form\`" "README.md"
}

run_suite
