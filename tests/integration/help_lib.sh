# What `ratelimit --help` and `ratelimit COMMAND --help` list, for the suites that check
# the documentation and the completions against it. Sourced after lib.sh.

# The commands, one a line: the names that start a line of the section, not the lines that
# continue a description.
help_commands() {
  "$RATELIMIT" --help | awk '/^Commands:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on && /^  [a-z]/ { print $1 }'
}

# The long options that `ratelimit [COMMAND] --help` lists, one a line: those of the
# option column only (two spaces in), not those a description mentions.
help_long_options() {
  "$RATELIMIT" "$@" --help | grep -E '^  -' | sed -E 's/^ +//; s/  .*//' |
    grep -oE -- '--[A-Za-z0-9][-A-Za-z0-9]*' | sort -u
}

# The long options to expect after COMMAND: its own and the global ones, which are
# accepted after the command name too (all but --version).
expected_options() {
  { help_long_options "$1"; help_long_options | grep -vx -- --version; } | sort -u
}

# Fails unless the discovery above found the commands and options that exist today, so
# that a change in the help format cannot make the drift checks pass vacuously.
check_discovery() {
  local commands
  commands=$(help_commands | tr '\n' ' ')
  expect_contains "$commands" "try wait run" "commands found in ratelimit --help" || return 1
  expect_contains "$(help_long_options try | tr '\n' ' ')" "--rate" "options of try" || return 1
  expect_contains "$(help_long_options | tr '\n' ' ')" "--db" "global options" || return 1
}
