#!/usr/bin/env bash
# `ratelimit simulate`: the algorithms on a virtual clock, through the real binary.
source "$(dirname "$0")/lib.sh"

PYTHON=/usr/bin/python3

# The row of `algorithm` in a table, as fields.
table_row() {
  printf '%s\n' "$1" | awk -v name="$2" '$1 == name'
}

# Column `n` (from 1) of the row of `algorithm` in a table.
table_cell() {
  table_row "$1" "$2" | awk -v n="$3" '{print $n}'
}

test_same_seed_same_output() {
  expect_status 0 rl simulate -r 10/s --profile poisson --seed 42 --format csv || return
  local first=$OUT
  expect_status 0 rl simulate -r 10/s --profile poisson --seed 42 --format csv || return
  expect_eq "$first" "$OUT" "second run with seed 42"
  expect_status 0 rl simulate -r 10/s --profile poisson --seed 43 --format csv || return
  [ "$first" != "$OUT" ] || fail "seeds 42 and 43 gave the same arrivals"
  expect_status 0 rl simulate -r 10/s --profile poisson --seed 42 || return
  first=$OUT
  expect_status 0 rl simulate -r 10/s --profile poisson --seed 42 || return
  expect_eq "$first" "$OUT" "table with seed 42"
}

test_default_seed_is_fixed() {
  expect_status 0 rl simulate -r 5/s --profile poisson --format json || return
  local first=$OUT
  expect_status 0 rl simulate -r 5/s --profile poisson --format json --seed 1 || return
  expect_eq "$first" "$OUT" "the default seed"
}

test_csv_row_count() {
  # steady at 10/s for 1s: 10 arrivals, 5 algorithms, and the header.
  expect_status 0 rl simulate -r 10/s --profile steady --duration 1s --format csv || return
  expect_eq 51 "$(printf '%s\n' "$OUT" | wc -l)" "rows"
  expect_eq "algorithm,t_ms,cost,allowed,granted_at_ms" "$(printf '%s\n' "$OUT" | head -n 1)"
  expect_contains "$OUT" "token-bucket,100,1,true,100"
  # Poisson arrivals: whatever their number, 5 algorithms make 5 times the rows of one.
  expect_status 0 rl simulate -r 10/s --profile poisson --duration 30s --format csv \
    -a sliding-log || return
  local one
  one=$(($(printf '%s\n' "$OUT" | wc -l) - 1))
  [ "$one" -gt 250 ] || fail "only $one arrivals"
  expect_status 0 rl simulate -r 10/s --profile poisson --duration 30s --format csv || return
  expect_eq $((5 * one + 1)) "$(printf '%s\n' "$OUT" | wc -l)" "rows for all algorithms"
}

test_trace_csv_rows_and_costs() {
  printf '# t cost\n0 3\n0.1 3\n\n0.2 3\n0.3 3 # too much\n0.4\n' >trace.txt
  expect_status 0 rl simulate -r 10/s --trace trace.txt --format csv -a fixed-window || return
  expect_eq 6 "$(printf '%s\n' "$OUT" | wc -l)" "rows"
  expect_contains "$OUT" "fixed-window,300,3,false,"
  expect_contains "$OUT" "fixed-window,400,1,true,400"
  expect_status 0 rl simulate -r 10/s --trace trace.txt --format csv || return
  expect_eq 26 "$(printf '%s\n' "$OUT" | wc -l)" "rows for all algorithms"
}

test_bad_trace_line() {
  printf '0\n0.5\n\n# fine so far\n1.5x\n2\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt || return
  expect_one_line
  expect_contains "$ERR" 'ratelimit: trace "trace.txt": line 5: invalid seconds "1.5x"'
  expect_eq "" "$OUT" "stdout"
  printf '0\n1 0\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt && expect_one_line &&
    expect_contains "$ERR" "line 2: invalid cost \"0\""
  printf '1\n0.5\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt && expect_one_line &&
    expect_contains "$ERR" "line 2: 0.5 comes before the previous arrival"
  printf '0\n0 11\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt && expect_one_line &&
    expect_contains "$ERR" "line 2: cost 11 can never be granted"
  printf '# nothing\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt && expect_one_line &&
    expect_contains "$ERR" "no arrivals"
  expect_status 2 rl simulate -r 10/s --trace missing.txt && expect_one_line &&
    expect_contains "$ERR" 'cannot read trace "missing.txt": no such file'
}

test_trace_from_stdin() {
  printf '0\n0.05\n0.1 2\n1\n' >trace.txt
  expect_status 0 rl simulate -r 2/s --trace trace.txt --format csv || return
  local from_file=$OUT
  OUT=$(rl simulate -r 2/s --trace - --format csv <trace.txt)
  expect_eq "$from_file" "$OUT" "csv from standard input"
  OUT=$(printf '0\n0.1 2\n' | rl simulate -r 2/s --trace - 2>&1)
  expect_contains "$OUT" "trace on standard input: 2 arrivals (cost 3)"
  OUT=$(printf '0\nx\n' | rl simulate -r 2/s --trace - 2>&1)
  expect_contains "$OUT" "ratelimit: trace on standard input: line 2: invalid seconds"
}

test_json_parses() {
  expect_status 0 rl simulate -r 10/s -r 50/min --profile poisson --load 2 --mode wait \
    --format json || return
  printf '%s' "$OUT" | "$PYTHON" -c 'import json,sys; json.load(sys.stdin)' ||
    fail "not JSON: $OUT"
  local names
  names=$(printf '%s' "$OUT" | "$PYTHON" -c '
import json, sys
for run in json.load(sys.stdin):
    assert run["mode"] == "wait" and run["max_wait_ms"] >= run["mean_wait_ms"] >= 0, run
    assert len(run["admissions"]) == len(run["sparkline"]), run
    print(run["algorithm"])')
  expect_eq "token-bucket leaky-bucket fixed-window sliding-window sliding-log" \
    "$(echo $names)" "algorithms"
  expect_status 0 rl --json simulate -r 10/s --profile burst -a token-bucket || return
  expect_eq 1 "$(printf '%s' "$OUT" | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)))')" \
    "objects with --json and one algorithm"
}

test_boundary_profile_in_json() {
  expect_status 0 rl simulate -r 10/s --profile boundary --format json || return
  local summary
  summary=$(printf '%s' "$OUT" | "$PYTHON" -c '
import json, sys
runs = {run["algorithm"]: run for run in json.load(sys.stdin)}
for name in ("fixed-window", "sliding-log"):
    run = runs[name]
    print(name, run["admitted"], run["denied"], run["peak_per_period"], run["recommended"])')
  expect_contains "$summary" "fixed-window 100 0 20 False"
  expect_contains "$summary" "sliding-log 50 50 10 True"
}

test_json_names_requests_and_cost_apart() {
  # One request of cost 3 admitted: 1 admitted, 3 units, a peak of 3 units.
  printf '0 3\n0.5 3\n' >trace
  expect_status 0 rl simulate -r 3/s -a sliding-log --trace trace --format json || return
  expect_contains "$OUT" '"admitted":1,"denied":1,"admitted_cost":3,"peak_per_period":3'
}

test_boundary_profile_in_table() {
  expect_status 0 rl simulate -r 10/s --profile boundary || return
  expect_eq "boundary profile: 100 arrivals in 10s, try mode, limit 10/s" \
    "$(printf '%s\n' "$OUT" | head -n 1)" "first line"
  expect_contains "$OUT" "algorithm       admitted  denied  peak_per_period  state_bytes  admissions per 250ms"
  # algorithm admitted denied peak_per_period state_bytes sparkline
  expect_eq "100 0 20 16" "$(table_row "$OUT" fixed-window | awk '{print $2, $3, $4, $5}')" \
    "fixed-window"
  expect_eq "50 50 10" "$(table_row "$OUT" sliding-log | awk '{print $2, $3, $4}')" "sliding-log"
  # 40 blocks of 3 bytes each in UTF-8, whatever the locale.
  expect_eq 120 "$(printf '%s' "$(table_cell "$OUT" fixed-window 6)" | wc -c)" "sparkline bytes"
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" \
    "recommendation: sliding-log: fixed-window admitted 20 within one 1s"
  expect_eq "default without -a: sliding-log (exact: never more than N in any period)" \
    "$(printf '%s\n' "$OUT" | tail -n 2 | head -n 1)" "the default's line"
  expect_eq 9 "$(printf '%s\n' "$OUT" | wc -l)" "lines"
}

# Without -a, simulate compares all five and names the one try, wait, run and pipe would
# use with the same options; with -a it simulates that one alone.
test_the_default_is_named_as_the_other_commands_pick_it() {
  expect_status 0 rl simulate -r 5/s --profile steady -b 2 || return
  expect_contains "$OUT" "default without -a: token-bucket (-b given)"
  expect_status 0 rl simulate -r 5/s --profile steady --format json || return
  expect_contains "$OUT" '{"algorithm":"sliding-log",'
  expect_eq 1 "$(grep -c '"default":true' <<<"$OUT")" "objects marked default"
  expect_contains "$(grep '"default":true' <<<"$OUT")" '"algorithm":"sliding-log"'
  expect_status 0 rl simulate -r 5/s --profile steady -a token-bucket || return
  expect_true "a default named with -a: $OUT" eval '! grep -q "default without -a" <<<"$OUT"'
}

test_table_columns_align() {
  expect_status 0 rl simulate -r 1000/s --profile poisson --load 3 --mode wait || return
  expect_contains "$OUT" "max_wait_ms  mean_wait_ms"
  # Every row ends its numbers where the header's do.
  local widths
  widths=$(printf '%s\n' "$OUT" | sed -n '2,7p' | sed 's/  [▁▂▃▄▅▆▇█]*$//; s/  admissions per .*//' |
    awk '{print length($0)}' | sort -u | wc -l)
  expect_eq 1 "$widths" "distinct row widths"
}

test_wait_mode_spaces_leaky_bucket_grants() {
  printf '0\n0\n0\n0\n' >trace.txt
  expect_status 0 rl simulate -r 10/s --trace trace.txt --mode wait -a leaky-bucket \
    --format csv || return
  expect_eq "0 100 200 300" "$(printf '%s\n' "$OUT" | awk -F, 'NR > 1 {print $5}' | xargs)" \
    "grant times"
  expect_status 0 rl simulate -r 10/s --trace trace.txt --mode wait -a leaky-bucket || return
  expect_eq "300 150" "$(table_row "$OUT" leaky-bucket | awk '{print $5, $6}')" "waits"
}

test_source_is_exactly_one() {
  expect_status 2 rl simulate -r 10/s && expect_one_line &&
    expect_contains "$ERR" "give exactly one of --trace FILE and --profile"
  printf '0\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt --profile steady && expect_one_line &&
    expect_contains "$ERR" "give exactly one of --trace FILE and --profile"
}

test_bad_options() {
  local case
  while IFS='|' read -r args message; do
    # shellcheck disable=SC2086
    expect_status 2 rl simulate $args || continue
    expect_one_line && expect_contains "$ERR" "$message" "stderr of: $args"
  done <<'CASES'
-r 10/s --profile stormy|unknown profile "stormy"
-r 10/s --profile steady --mode later|invalid mode "later": expected try or wait
-r 10/s --profile steady --format xml|invalid format "xml": expected table, csv or json
-r 10/s --profile steady --load 0|invalid load "0"
-r 10/s --profile steady --load abc|invalid load "abc"
-r 10/s --profile steady --duration -1s|invalid duration "-1s"
-r 10/s --profile steady --duration 0|invalid --duration 0
-r 10/s --profile steady --seed 3|--seed applies to --profile poisson only
-r 10/s --profile poisson --seed x|invalid seed "x"
-r 10/parsec --profile steady|invalid rate "10/parsec"
-r 10/s --profile steady -a token_bucket|did you mean "token-bucket"?
-r 10/s --profile steady -a fixed-window -b 5|--burst does not apply to fixed-window
-r 10/s --profile steady -b 0|invalid burst "0"
-r 10/s -r 20/s --profile steady -b 1 -b 2 -b 3|3 bursts for 2 rates
-r 10/s -r 20/1s --profile steady|two rates with the same period
-r 1000000/s --profile steady --duration 1h|more than 10000000 arrivals
--profile steady|--rate is required
-r 10/s --profile steady --json --format csv|--json conflicts with --format csv
CASES
  printf '0\n' >trace.txt
  expect_status 2 rl simulate -r 10/s --trace trace.txt --load 2 && expect_one_line &&
    expect_contains "$ERR" "shape a --profile"
}

test_burst_applies_to_buckets_only_with_all() {
  expect_status 0 rl simulate -r 10/s -b 20 --profile burst --format json || return
  expect_contains "$OUT" '"algorithm":"fixed-window"'
  # burst: 20 arrivals at once every 2 s from 1.9 s; a bucket of 20 takes each whole burst.
  local admitted
  admitted=$(printf '%s' "$OUT" | "$PYTHON" -c '
import json, sys
print(" ".join(str(run["admitted"]) for run in json.load(sys.stdin)))')
  expect_eq "100 5 50 50 50" "$admitted" "admitted per algorithm"
}

test_never_opens_a_store() {
  expect_status 0 rl simulate -r 10/s --profile steady || return
  [ ! -e "$DB" ] || fail "simulate created $DB"
  expect_status 0 rl --db /nonexistent/dir/ratelimit.db simulate -r 10/s --profile steady ||
    return
  printf 'not a database\n' >foreign.db
  local before
  before=$(cksum <foreign.db)
  expect_status 0 rl --db foreign.db simulate -r 10/s --profile steady || return
  expect_eq "$before" "$(cksum <foreign.db)" "foreign file"
}

# Decisions worked out by hand from the definitions, at 2/s (period 1 s, emission interval
# 0.5 s, burst 2), for arrivals at 0, 0.1, 0.2, 0.9, 1.0, 1.05 and 1.5 s:
#  fixed-window    [0,1) admits 0 and 0.1; [1,2) admits 1.0 and 1.05, then is full.
#  sliding-log     (t-1, t] holds at most 2: 1.0 sees only 0.1, 1.05 sees 0.1 and 1.0,
#                  1.5 sees 1.0.
#  sliding-window  at 1.0 the estimate is 2 x (1 - 0) = 2, at 1.05 it is 1.9, at 1.5 it is
#                  1: only 1.5 gets in after the first window.
#  token-bucket    tokens 2, 1.2, 0.4 (denied), 1.8, 1.0, 0.1 (denied), 1.0 before each.
#  leaky-bucket    the output is free at 0, then at 0.5 (taken at 0.9), then at 1.4 (taken
#                  at 1.5).
test_decisions_match_the_definitions_worked_by_hand() {
  printf '0\n0.1\n0.2\n0.9\n1.0\n1.05\n1.5\n' >trace
  expect_status 0 rl simulate -r 2/s --trace trace --format csv || return
  local decisions
  decisions=$(awk -F, 'NR > 1 { d[$1] = d[$1] ($4 == "true" ? "T" : "F") }
    END { for (a in d) print a, d[a] }' <<<"$OUT" | sort)
  expect_eq "fixed-window TTFFTTF
leaky-bucket TFFTFFT
sliding-log TTFFTFT
sliding-window TTFFFFT
token-bucket TTFTTFT" "$decisions" "decisions per algorithm (T granted, F denied)"
}

test_recommends_from_the_shape() {
  expect_status 0 rl simulate -r 10/s --profile burst || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: token-bucket: "
  expect_status 0 rl simulate -r 10/s --profile steady --load 2 || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: leaky-bucket: "
  expect_status 0 rl simulate -r 10/s --profile steady || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: fixed-window: "
  # The counter that would come close still let 10999 through: the table rules it out as
  # it rules out fixed-window, and the exact log is worth its size.
  expect_status 0 rl simulate -r 10000/s --profile boundary || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: sliding-log: the shape of the arrivals points to sliding-window, but sliding-window let 10999 through in one 1s, above the limit of 10000"
}

# In wait mode every request waits for its slot: the recommendation agrees with the table,
# never an algorithm that denied requests or let more than N through in one period.
test_wait_mode_recommends_what_the_table_bears_out() {
  expect_status 0 rl simulate -r 10/s --mode wait --profile steady --load 2 || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: sliding-log: the shape of the arrivals points to leaky-bucket, but leaky-bucket denied 90 requests that were to wait (its queue was full); sliding-log kept to 10 in one 1s and denied none"
  expect_status 0 rl simulate -r 5/s --mode wait --profile burst || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: sliding-log: the shape of the arrivals points to token-bucket, but token-bucket let 9 through in one 1s, above the limit of 5"
  expect_status 0 rl simulate -r 10/s --mode wait --profile boundary || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: sliding-log: "
  # Whatever is asked for, the recommendation reads every algorithm's figures.
  expect_status 0 rl simulate -r 5/s --mode wait --profile burst -a token-bucket || return
  expect_contains "$(printf '%s\n' "$OUT" | tail -n 1)" "recommendation: sliding-log: "
}

# Field `$2` of the JSON object in `$1`, as Python prints it.
json_field() {
  printf '%s\n' "$1" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}

test_adaptive_finds_a_secret_limit() {
  # Eight workers, a ceiling of 50/s, a server that allows 5/s: few 429s, close to 60 s.
  expect_status 0 rl simulate -r 50/s --adaptive --server-limit 5/s --format json || return
  expect_eq 300 "$(json_field "$OUT" calls)" "calls"
  local throttled cuts duration rates
  throttled=$(json_field "$OUT" throttled)
  cuts=$(json_field "$OUT" cuts)
  duration=$(json_field "$OUT" duration_ms)
  [ "$throttled" -ge 1 ] && [ "$throttled" -le 30 ] || fail "$throttled answers 429 of 300"
  [ "$cuts" -ge 1 ] && [ "$cuts" -lt "$throttled" ] || fail "$cuts cuts for $throttled 429s"
  "$PYTHON" -c 'import sys; sys.exit(not 59000 <= float(sys.argv[1]) <= 90000)' "$duration" ||
    fail "the replay lasted ${duration} ms"
  # After the first seconds the rate stays near the secret limit, far below the ceiling.
  rates=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
rates = [float(r) for r in json.load(sys.stdin)["rate_per_s"]]
print(min(rates[2:]), max(rates[2:]))')
  "$PYTHON" -c 'import sys; low, high = map(float, sys.argv[1:]); sys.exit(not (low >= 2 and high <= 10))' \
    $rates || fail "rates from the third interval on: $rates"
}

test_adaptive_follows_a_raise_of_the_secret_limit() {
  expect_status 0 rl simulate -r 50/s --adaptive --server-limit 5/s --server-limit 10/s@30s \
    --format json || return
  local reached
  reached=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["raises"][0]["reached_ms"])')
  "$PYTHON" -c 'import sys; sys.exit(not 0 < float(sys.argv[1]) <= 30000)' "$reached" ||
    fail "7/s reached ${reached} ms after the raise"
  expect_status 0 rl simulate -r 50/s --adaptive --server-limit 10/s@30s --server-limit 5/s || return
  expect_contains "$OUT" "after the raise to 10/s at 30s: the rate reached 7.00/s in "
  expect_contains "$OUT" "429 answers: "
  expect_contains "$OUT" "duration: "
  expect_status 0 rl simulate -r 50/s --adaptive --server-limit 5/s --calls 20 --format csv ||
    return
  expect_eq "time_ms,rate_per_s,succeeded,throttled" "$(printf '%s\n' "$OUT" | head -n 1)"
}

test_adaptive_replays_the_same_with_the_same_seed() {
  expect_status 0 rl simulate -r 20/s --adaptive --server-limit 3/s --workers 4 --calls 60 \
    --latency 250ms --seed 7 --format json || return
  local first=$OUT
  expect_status 0 rl simulate -r 20/s --adaptive --server-limit 3/s --workers 4 --calls 60 \
    --latency 250ms --seed 7 --format json || return
  expect_eq "$first" "$OUT" "second run with seed 7"
}

test_adaptive_refuses_what_does_not_apply() {
  expect_status 2 rl simulate -r 50/s --adaptive || return
  expect_contains "$ERR" "--server-limit 5/s"
  expect_status 2 rl simulate -r 50/s --server-limit 5/s || return
  expect_contains "$ERR" "add --adaptive"
  expect_status 2 rl simulate -r 50/s --workers 3 --profile steady || return
  expect_contains "$ERR" "add --adaptive"
  expect_status 2 rl simulate -r 50/s --adaptive --server-limit 5/s --profile steady || return
  expect_contains "$ERR" "--adaptive replays its own calls"
  expect_status 2 rl simulate -r 50/s -r 1000/h --adaptive --server-limit 5/s || return
  expect_contains "$ERR" "one --rate"
  expect_status 2 rl simulate -r 50/s --adaptive --server-limit 5/s@10s || return
  expect_contains "$ERR" "no limit from the start"
  expect_status 2 rl simulate -r 50/s --adaptive --server-limit 5/s --server-limit 6/s@0 || return
  expect_contains "$ERR" "two limits from 0s"
  expect_status 2 rl simulate -r 50/s --adaptive --server-limit 5/parsec || return
  expect_contains "$ERR" "--server-limit: invalid rate"
  expect_status 2 rl simulate -r 50/s --adaptive --server-limit 5/s --workers 0 || return
  expect_status 2 rl simulate -r 50/s --adaptive --server-limit 5/s --latency 2h || return
}

test_help_lists_simulate() {
  expect_status 0 rl --help || return
  expect_contains "$OUT" "simulate"
  expect_status 0 rl simulate --help || return
  expect_contains "$OUT" "--profile"
}

run_suite
