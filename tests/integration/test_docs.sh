#!/usr/bin/env bash
# The man page: it lints clean, and documents every command, option and exit status that
# the binary has. Also --help and --version.
. "$(dirname "$0")/lib.sh"
. "$SUITE_DIR/help_lib.sh"

SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)
MAN_PAGE=$SOURCE_DIR/man/ratelimit.1
PYTHON=/usr/bin/python3

# The man page as text: hyphens as typed, without the overstrike of bold and underline.
rendered_man_page() {
  mandoc -T ascii "$MAN_PAGE" | sed $'s/.\b//g'
}

# The entries of the OPTIONS section that apply to COMMAND: its subsection "Global
# options", and the subsections whose title or first line name COMMAND. Only the global
# options without COMMAND.
options_text_for() {
  rendered_man_page | "$PYTHON" -c '
import re, sys
command = sys.argv[1]
options = sys.stdin.read().split("\nOPTIONS\n", 1)[1]
options = re.split(r"\n(?=[A-Z])", options, maxsplit=1)[0]
for block in re.split(r"\n(?=   \S)", "\n" + options):
    lines = block.strip("\n").splitlines()
    if not lines:
        continue
    heading = " ".join(lines[:2])
    if "Global options" in lines[0] or (command and re.search(r"\b%s\b" % re.escape(command), heading)):
        print(block)' "$1"
}

# The long options that `ratelimit [COMMAND] --help` lists (every command's and the
# global ones) without an entry of their own under OPTIONS where that command's options
# are: a line that starts with the option, after its short form if any.
undocumented_options() {
  local text command option
  for command in '' $(help_commands); do
    text=$(options_text_for "$command")
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

# The text of one section of the rendered man page, without its heading.
man_section() {
  rendered_man_page | awk -v name="$1" '$0 == name { on = 1; next } on && /^[A-Z]/ { exit } on'
}

test_man_page_gives_the_decision_checklist() {
  local text
  text=$(man_section DESCRIPTION | tr -s ' \n' '  ')
  expect_contains "$text" "Short bursts allowed, the average rate bounded: token-bucket."
  expect_contains "$text" "A downstream that needs a steady rate, one request every PERIOD/N: leaky-bucket."
  expect_contains "$text" "Exact counts, as for a third-party API's quota, billing or a hard limit: sliding-log (the default)."
  expect_contains "$text" "Simple and cheap: fixed-window"
  expect_contains "$text" "or sliding-window"
  local algorithm
  for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
    expect_contains "$(man_section OPTIONS)" "$algorithm" "algorithm names under -a"
  done
}

test_man_page_examples_cover_each_use() {
  local text
  text=$(man_section EXAMPLES)
  expect_contains "$text" "* * * * ratelimit run " "a cron job"
  expect_contains "$text" "&& curl " "a curl wrapper"
  expect_contains "$text" "| xargs -n 1 curl" "an xargs pipeline"
  expect_contains "$text" "-r 10/s -r 5000/h" "several limits on one key"
  expect_eq 2 "$(grep -c 'ratelimit pipe fetch -r 5/s' <<<"$text")" "two pipelines sharing a key"
  expect_contains "$text" "RATELIMIT_STORE=redis://" "the Redis store"
}

test_man_page_names_the_files() {
  local text
  text=$(man_section FILES)
  expect_contains "$text" "~/.local/state/ratelimit/ratelimit.db"
  expect_contains "$text" "ratelimit.db-wal"
  expect_contains "$(man_section ENVIRONMENT)" "RATELIMIT_DB"
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

# --help fits a terminal: 80 columns when standard output is not one.
test_every_help_fits_80_columns_when_not_a_terminal() {
  check_discovery || return
  local command wide
  for command in '' $(help_commands); do
    # shellcheck disable=SC2086 # no word at all for ratelimit --help
    expect_status 0 rl $command --help || continue
    wide=$(awk 'length > 80 { print length ": " $0 }' <<<"$OUT")
    expect_eq "" "$wide" "lines of ratelimit $command --help wider than 80 columns"
  done
}

# ratelimit COMMAND --help on a terminal of WIDTH columns (script(1) gives it one).
help_on_a_terminal() {
  local width=$1
  shift
  script -qec "stty cols $width rows 50; $(printf '%q ' "$RATELIMIT" "$@") --help" /dev/null |
    tr -d '\r'
}

# On a terminal --help fills its width, up to 100 columns.
test_help_wraps_to_the_terminal_width() {
  command -v script >/dev/null || { skip "no script(1)"; return 0; }
  local out width
  for width in 50 120; do
    out=$(help_on_a_terminal "$width" run)
    expect_contains "$out" "Usage: ratelimit run" "run --help on $width columns" || continue
    local limit=$((width < 100 ? width : 100))
    expect_eq "" "$(awk -v limit="$limit" 'length > limit' <<<"$out")" \
      "lines wider than $limit columns on a terminal of $width"
    expect_true "no line of run --help on $width columns is wider than $((limit - 10)): $out" \
      awk -v limit="$((limit - 10))" 'length > limit { found = 1 } END { exit !found }' <<<"$out"
  done
}

# The global options are listed once, by ratelimit --help; each command's --help lists its
# own options and refers to the global ones.
test_global_options_are_listed_once() {
  check_discovery || return
  local globals command option listed
  globals=$(help_long_options | grep -vx -- '--help\|--version')
  for option in --db --store --json --quiet --limited-exit-code --store-ca --config; do
    grep -qx -- "$option" <<<"$globals" || fail "ratelimit --help does not list $option"
  done
  for command in $(help_commands); do
    expect_status 0 rl "$command" --help || continue
    expect_contains "$OUT" "see ratelimit --help" "ratelimit $command --help"
    listed=$(help_long_options "$command")
    for option in $globals; do
      if grep -qx -- "$option" <<<"$listed"; then
        fail "ratelimit $command --help lists the global option $option"
      fi
    done
  done
  # Still taken after the command's name.
  expect_status 0 rl try k -r 1/s --json --db other.db -q
  expect_true "--db after the command: no other.db" test -e other.db
}

# The usage line shows each command's arguments, required ones without brackets.
test_help_shows_required_arguments_as_required() {
  local command usage
  for usage in "try:ratelimit try [OPTIONS] KEY" "pause:ratelimit pause [OPTIONS] KEY DURATION" \
    "run:ratelimit run [OPTIONS] KEY [--] COMMAND [ARG...]" \
    "status:ratelimit status [OPTIONS] [KEY...]" "pipe:ratelimit pipe [OPTIONS] [KEY]"; do
    command=${usage%%:*}
    expect_status 0 rl "$command" --help || continue
    expect_eq "Usage: ${usage#*:}" "$(grep '^Usage:' <<<"$OUT")" "the usage of $command"
  done
}

test_version_names_the_stores() {
  expect_status 0 rl --version
  local form='^ratelimit [0-9]+\.[0-9]+\.[0-9]+ \(stores: sqlite, redis\)$'
  [[ $OUT =~ $form ]] || fail "unexpected --version: '$OUT'"
}

# The store URL form that a malformed URL's message names (the ACL user included) is the
# one that --help, the man page and docs/redis.md give.
test_store_url_form_is_the_same_everywhere() {
  expect_status 2 rl --store redis:/x try k -r 1/s
  local forms=${ERR##*expected } form
  expect_eq 'redis[s]://[[user]:password@]host[:port][/db], redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], unix://[[user]:password@]/path[?db=N] or sqlite:PATH' \
    "$forms" "forms in the message"
  forms=${forms/ or /, }
  local help
  help=$(rl --help)
  for form in ${forms//, / }; do
    expect_true "ratelimit --help has no line '  $form'" grep -qxF -- "  $form" <<<"$help"
    [ "$form" = sqlite:PATH ] && continue
    expect_contains "$(rendered_man_page)" "$form" "the man page"
    expect_contains "$(cat "$SOURCE_DIR/docs/redis.md")" "\`$form\`" "docs/redis.md"
  done
}

# Every ratelimit command in the README's and the man page's examples runs as written (on
# a database of its own, with `true` for the command that run executes): none is a usage
# error.
test_every_documented_example_runs() {
  expect_status 0 "$PYTHON" "$SUITE_DIR/doc_examples.py" "$RATELIMIT" "$SOURCE_DIR/README.md" \
    "$SOURCE_DIR/man/ratelimit.1" "$TEST_DIR" || return
  expect_contains "$OUT" " examples ran, 0 failed"
  local count=${OUT%% examples ran*}
  count=${count##*$'\n'}
  expect_true "only $count examples found" test "$count" -ge 20
}

# Every algorithm the binary knows (its one table) is described in the man page, in the
# README's table and in -a's --help, and no other: a new one cannot ship undocumented.
test_every_algorithm_is_documented() {
  local algorithms algorithm source help simulate_help
  algorithms=$(binary_algorithms)
  expect_true "the binary lists no algorithm" test -n "$algorithms" || return
  source=$(cat "$SOURCE_DIR/man/ratelimit.1")
  help=$(rl try --help)
  simulate_help=$(rl simulate --help)
  for algorithm in $algorithms; do
    local escaped=${algorithm//-/\\-}
    expect_contains "$source" $'.TP\n.B '"$escaped"$'\n' "the man page's entry for $algorithm"
    expect_contains "$(man_section DESCRIPTION | tr -s ' \n' '  ')" \
      "What each algorithm admits in any PERIOD" "the man page"
    expect_contains "$(cat "$SOURCE_DIR/README.md")" "| \`$algorithm\`" "README.md's table"
    expect_contains "$help" "$algorithm" "try --help"
    expect_contains "$simulate_help" "$algorithm" "simulate --help"
  done
  # Each one's line in "What each algorithm admits in any PERIOD".
  local admits
  admits=$(man_section DESCRIPTION | sed -n '/What each algorithm admits/,/Choosing an algorithm/p')
  for algorithm in $algorithms; do
    expect_true "no bound for $algorithm in: $admits" grep -q "^ *$algorithm " <<<"$admits"
  done
  # And no other: as many rows in the README's table and entries in the man page's list as
  # the binary has algorithms, and their number in words where the texts count them.
  local count rows entries words=(zero one two three four five six seven eight nine ten)
  count=$(wc -w <<<"$algorithms")
  rows=$(sed -n '/^## Choosing an algorithm/,/^## /p' "$SOURCE_DIR/README.md" |
    grep -cE '^\| `[a-z-]+`')
  expect_eq "$count" "$rows" "rows of the README's table of algorithms"
  entries=$(sed -n '/^\.SS What each algorithm admits/,/^\.SS /p' "$SOURCE_DIR/man/ratelimit.1" |
    grep -c '^\.B ')
  expect_eq "$count" "$entries" "entries of the man page's \"What each algorithm admits\""
  expect_contains "$(cat "$SOURCE_DIR/README.md")" "picks one of ${words[count]}" "README.md"
  expect_contains "$(man_section DESCRIPTION | tr -s ' \n' '  ')" \
    "limited by one of ${words[count]} algorithms" "the man page"
}

# The man page and the README state, for each algorithm, the most it admits in any PERIOD;
# the README's table, what an HTTP API needs.
test_each_algorithm_states_what_it_admits_in_any_period() {
  local text
  text=$(man_section DESCRIPTION | tr -s ' \n' '  ')
  expect_contains "$text" "What each algorithm admits in any PERIOD"
  expect_contains "$text" "sliding-log N leaky-bucket N token-bucket BURST + N"
  expect_contains "$text" "fixed-window 2N"
  expect_contains "$text" "sliding-window under 2N"
  local readme
  readme=$(cat "$SOURCE_DIR/README.md")
  expect_contains "$readme" "| \`sliding-log\` (default) | exact counts of grants: billing, a hard limit, a job's runs | N |"
  expect_contains "$readme" "| \`run --until-exit\` | an HTTP API's quota: it counts requests as they arrive"
  expect_contains "$readme" "| BURST + N |"
  expect_contains "$readme" "| 2N, at a boundary |"
  expect_contains "$readme" "| under 2N |"
}

run_suite
