#!/usr/bin/env bash
# The five algorithms and several limits on one key, through the real binary: concurrent
# processes hammering one key obey each algorithm's bound, a key is bound to its algorithm,
# bad combinations exit 2, an interrupted wait gives back, and --json reports each
# algorithm's fields.
. "$(dirname "$0")/lib.sh" "$@"

PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3

ALGORITHMS=$(binary_algorithms)

# Whether VALUE is within [LOW, HIGH].
in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

# Succeeds when COMMAND fails.
fails() { ! "$@"; }

# A top-level field of a decision's JSON, not one of its "limits" array.
top_field() { json_field "${1%%,\"limits\":*}" "$2"; }

# --- 8 processes hammering one key --------------------------------------------------

# hammer_worker ID DEADLINE_US ARGS...: until the deadline, tries, waits and runs on key
# "hammer" with ARGS; writes one line per outcome to grants.ID:
#   granted LO_US HI_US COST    the grant's time lies in [LO, HI]
#   limited                     exit 1
#   error STATUS                anything else
# LO is taken before the process starts and HI after it exits (for run, when the command
# itself ran): a grant recorded late can only widen its interval, never hide it.
# How long a worker's wait or run may wait for its slot.
HAMMER_TIMEOUT=500ms

hammer_worker() {
  local id=$1 deadline=$2
  shift 2
  local n=0 lo hi out status cost kind
  while :; do
    lo=${EPOCHREALTIME/[.,]/}
    [ "$lo" -ge "$deadline" ] && break
    cost=1
    [ $((n % 5)) = 4 ] && cost=2
    case $((n % 3)) in
    0)
      kind=try
      out=$("$RATELIMIT" try hammer "$@" -c $cost -q --json 2>>"$TEST_DIR/errors.$id")
      status=$?
      ;;
    1)
      kind=wait
      out=$("$RATELIMIT" wait hammer "$@" -c $cost -t "$HAMMER_TIMEOUT" -q --json 2>>"$TEST_DIR/errors.$id")
      status=$?
      ;;
    2)
      kind=run
      out=$("$RATELIMIT" run hammer "$@" -c $cost -t "$HAMMER_TIMEOUT" -q -- date +%s%6N \
        2>>"$TEST_DIR/errors.$id")
      status=$?
      ;;
    esac
    hi=${EPOCHREALTIME/[.,]/}
    case $status in
    0)
      [ $kind = run ] && hi=$out
      echo "granted $lo $hi $cost $kind"
      ;;
    1) echo limited ;;
    *) echo "error $status $kind" ;;
    esac
    n=$((n + 1))
  done >"$TEST_DIR/grants.$id"
}

# The bounds, checked on the grants' intervals. A violation is reported only when it is
# certain whatever the true times inside the intervals, and the bound is the algorithm's at
# its loosest. What is judged: for the windows, every grant (one that straddles a boundary
# in whichever window fits best); for the sliding log, the grants whose intervals all lie
# within one period; for the buckets, the grants whose intervals lie within [s, u], for
# every s and u.
#   check_bounds ALGORITHM N/PERIOD_MS/BURST... < "LO HI COST" lines (microseconds)
CHECKER=$(
  cat <<'EOF'
import sys

algorithm = sys.argv[1]
limits = [tuple(int(x) for x in spec.split("/")) for spec in sys.argv[2:]]
SLACK = 1000  # us: clocks read by different processes, rounding to microseconds
grants = []
for line in sys.stdin:
    lo, hi, cost = (int(x) for x in line.split())
    grants.append((lo - SLACK, hi + SLACK, cost))
grants.sort()
problems = []
peak = (0, 1, "")  # the judged window closest to its bound: total, bound, limit

def judge(name, total, allowed, where):
    global peak
    if total > allowed + 1e-9:
        problems.append(f"{name}: {total} {where}, at most {allowed:g}")
    elif total / allowed > peak[0] / peak[1]:
        peak = (total, allowed, name)

def inside_from(i, end):
    """Costs of the grants from the i-th (by start) whose interval ends before `end`."""
    total = 0
    for lo, hi, cost in grants[i:]:
        if lo >= end:
            break
        if hi < end:
            total += cost
    return total

for count, period_ms, burst in limits:
    period = period_ms * 1000
    interval = period / count  # the emission interval is this, rounded up: looser here
    name = f"{count}/{period_ms}ms"
    if algorithm == "sliding-log":
        # Intervals all inside [s, s + PERIOD) are inside one window (t - PERIOD, t].
        for i, (lo, _, _) in enumerate(grants):
            judge(name, inside_from(i, lo + period), count, f"within one period from {lo}")
    elif algorithm in ("fixed-window", "sliding-window"):
        # Every calendar window holds at most COUNT (the sliding window counts its current
        # window in full). A grant whose interval straddles a boundary is in one of the two
        # windows: the bound fails for certain when no choice of windows for those keeps
        # every window within COUNT, and putting as many as fit in the earlier window is
        # the best choice. Only an interval longer than a period is not judged.
        inside, straddling = {}, {}
        for lo, hi, cost in grants:
            first, last = lo // period, hi // period
            if first == last:
                inside[first] = inside.get(first, 0) + cost
            elif last == first + 1:
                straddling[first] = straddling.get(first, 0) + cost
        windows = sorted(set(inside) | {w + 1 for w in straddling})
        carried = 0
        for window in range(windows[0], windows[-1] + 1) if windows else []:
            load = inside.get(window, 0) + carried
            judge(name, load, count, f"in the window at {window * period}")
            carried = max(0, straddling.get(window, 0) - max(0, count - load))
    else:
        # In [s, u]: a token bucket grants at most burst + (u - s) / interval; a leaky
        # bucket at most (u - s) / interval plus the cost of the last grant.
        largest = max((cost for _, _, cost in grants), default=0)
        for i, (start, _, _) in enumerate(grants):
            ends = sorted((hi, cost) for lo, hi, cost in grants[i:] if lo < start + 4 * period)
            total = 0
            for end, cost in ends:
                total += cost
                allowed = (end - start) / interval
                allowed += burst if algorithm == "token-bucket" else largest
                judge(name, total, allowed, f"in [{start}, {end}]")
if problems:
    print("; ".join(problems[:3]))
    sys.exit(1)
print(f"closest to a bound: {peak[0]} of {peak[1]:.3g} ({peak[2]})")
EOF
)

# hammer ALGORITHM SECONDS LIMIT_SPECS RATELIMIT_ARGS...: runs 8 workers, checks every
# outcome was a grant or a refusal, that the key was saturated, and the bounds.
# LIMIT_SPECS: "N/PERIOD_MS/BURST ..." for the checker.
hammer() {
  local algorithm=$1 seconds=$2 specs=$3
  shift 3
  local deadline started i
  started=$(now_us)
  deadline=$((started + seconds * 1000000))
  for i in 1 2 3 4 5 6 7 8; do
    hammer_worker $i $deadline -a "$algorithm" "$@" &
  done
  wait
  local elapsed=$(($(now_us) - started))
  cat "$TEST_DIR"/grants.* >"$TEST_DIR/outcomes"
  local granted limited errors
  granted=$(grep -c '^granted' "$TEST_DIR/outcomes")
  limited=$(grep -c '^limited' "$TEST_DIR/outcomes")
  errors=$(grep -c '^error' "$TEST_DIR/outcomes")
  echo "    $algorithm: $granted granted, $limited limited in $((elapsed / 1000)) ms" \
    "($(grep -c 'granted.*wait$' "$TEST_DIR/outcomes") by wait," \
    "$(grep -c 'granted.*run$' "$TEST_DIR/outcomes") by run)"
  expect_eq 0 "$errors" "outcomes other than granted or limited" || return 1
  expect_eq "" "$(cat "$TEST_DIR"/errors.*)" "stderr of the workers" || return 1
  # Saturated: refusals, and at least 40 % of what the tightest limit allows in the run.
  expect_true "the key was never limited" [ "$limited" -gt 0 ]
  local count period_ms least=""
  for spec in $specs; do
    IFS=/ read -r count period_ms _ <<<"$spec"
    local floor=$((count * seconds * 1000 * 4 / 10 / period_ms))
    if [ -z "$least" ] || [ "$floor" -lt "$least" ]; then
      least=$floor
    fi
  done
  local units
  units=$(awk '$1 == "granted" { sum += $4 } END { print sum + 0 }' "$TEST_DIR/outcomes")
  expect_true "only $units units granted, expected at least $least" [ "$units" -ge "$least" ]
  # Both paths ran: grants made at once and grants that slept until their slot.
  expect_true "no grant by try" grep -q "granted.* try\$" "$TEST_DIR/outcomes"
  expect_true "no grant by wait or run" grep -qE "granted.* (wait|run)\$" "$TEST_DIR/outcomes"
  local report
  # shellcheck disable=SC2086
  report=$(awk '$1 == "granted" { print $2, $3, $4 }' "$TEST_DIR/outcomes" |
    "$PYTHON" -c "$CHECKER" "$algorithm" $specs)
  local status=$?
  if [ $status != 0 ]; then
    fail "$algorithm over-admitted: $report"
  else
    echo "    $report"
  fi
}

# Rates of a few per second: even a loaded machine, where a decision can take a tenth of a
# second, saturates them, and periods of seconds hold the intervals of many grants.
test_hammer_token_bucket() {
  hammer token-bucket 4 "6/2000/3" -r 6/2s -b 3
}

test_hammer_leaky_bucket() {
  hammer leaky-bucket 4 "4/2000/2" -r 4/2s -b 2
}

test_hammer_fixed_window() {
  hammer fixed-window 4 "6/2000/6" -r 6/2s
}

test_hammer_sliding_window() {
  hammer sliding-window 4 "6/2000/6" -r 6/2s
}

test_hammer_sliding_log() {
  # A full log frees a slot only when its oldest grant leaves, up to a period (2 s) away:
  # waits get a timeout to match, so that some are granted even with slow processes.
  HAMMER_TIMEOUT=2500ms hammer sliding-log 4 "6/2000/6 9/5000/9" -r 6/2s -r 9/5s
}

# The checker must see over-admission: the bounds fail on a grant too many.
test_hammer_checker_catches_over_admission() {
  local base=1700000000100000 # 0.1 s into a second
  check() { "$PYTHON" -c "$CHECKER" "$@" >/dev/null; }
  # 3 grants within 0.8 s under 2/s.
  printf '%s\n' "$base $((base + 10)) 1" "$((base + 400000)) $((base + 400010)) 1" \
    "$((base + 800000)) $((base + 800010)) 1" >lines
  expect_true "sliding-log 2/s accepted 3 in a second" fails check sliding-log 2/1000/2 <lines
  expect_true "token-bucket 2/s burst 1 accepted 3 in a second" \
    fails check token-bucket 2/1000/1 <lines
  expect_true "leaky-bucket 2/s accepted 3 in a second" \
    fails check leaky-bucket 2/1000/2 <lines
  expect_true "fixed-window 2/s accepted 3 in one window" \
    fails check fixed-window 2/1000/2 <lines
  expect_true "sliding-window 2/s accepted 3 in one window" \
    fails check sliding-window 2/1000/2 <lines
  expect_true "sliding-log 3/s refused 3 in a second" check sliding-log 3/1000/3 <lines
  # Grants across a boundary count in one window or the other: 2 in each window of 2/s,
  # and one more that is in one of them.
  local second=1700000001000000
  printf '%s\n' "$base $((base + 10)) 1" "$((base + 10)) $((base + 20)) 1" \
    "$((second - 10)) $((second + 10)) 1" \
    "$((second + 100)) $((second + 110)) 1" "$((second + 200)) $((second + 210)) 1" >across
  expect_true "fixed-window 2/s accepted 5 in two windows" \
    fails check fixed-window 2/1000/2 <across
  expect_true "sliding-window 2/s accepted 5 in two windows" \
    fails check sliding-window 2/1000/2 <across
  expect_true "fixed-window 3/s refused 5 in two windows" check fixed-window 3/1000/3 <across
  # Intervals too wide to be sure of anything are not counted.
  printf '%s\n' "$base $((base + 1000000)) 1" "$base $((base + 1000000)) 1" \
    "$base $((base + 1000000)) 1" >wide
  expect_true "uncertain grants were judged" check sliding-log 2/1000/2 <wide
}

# --- a key is bound to its algorithm; bad combinations ------------------------------------

# A rate of 5/d: the key must outlive the test, and on Redis a key that is fresh again
# expires, and may then be taken up by another algorithm.
test_key_is_bound_to_its_algorithm() {
  local first other
  for first in $ALGORITHMS; do
    expect_status 0 rl try "key-$first" -r 5/d -a "$first" || continue
    for other in $ALGORITHMS; do
      [ "$other" = "$first" ] && continue
      expect_status 2 rl try "key-$first" -r 5/d -a "$other" || continue
      expect_one_line
      expect_contains "$ERR" "ratelimit: key \"key-$first\" is limited by $first, not $other" \
        "stderr"
      expect_contains "$ERR" "ratelimit reset key-$first" "stderr"
    done
    # wait and run refuse it the same way, before sleeping or running anything.
    other=token-bucket
    [ "$first" = token-bucket ] && other=sliding-log
    expect_status 2 rl wait "key-$first" -r 5/d -a "$other" -t 1s
    expect_contains "$ERR" "ratelimit reset key-$first" "stderr"
    expect_status 125 rl run "key-$first" -r 5/d -a "$other" -- touch ran
    expect_contains "$ERR" "ratelimit reset key-$first" "stderr"
    expect_true "run ran its command on a key of another algorithm" [ ! -e ran ]
    # The key still works with its own algorithm: granted, or limited for the leaky bucket,
    # whose try is granted only at an empty queue's output time (hours away).
    if [ "$first" = leaky-bucket ]; then
      expect_status 1 rl try "key-$first" -r 5/d -a "$first"
      expect_contains "$ERR" "ratelimit: \"key-$first\" limited (leaky-bucket" "stderr"
    else
      expect_status 0 rl try "key-$first" -r 5/d -a "$first"
    fi
  done
}

# -r N/PERIOD alone means "never more than N in any PERIOD"; a burst is a token-bucket
# notion, so -b alone picks the token bucket. Slow rates: a key must not go fresh (and
# expire on Redis) before status looks.
test_the_default_is_exact_and_a_burst_alone_picks_the_token_bucket() {
  expect_status 0 rl --json try exact -r 4/min
  expect_eq '"sliding-log"' "$(json_field "$OUT" algorithm)" "algorithm without -a"
  expect_status 0 rl --json try smooth -r 4/min -b 1
  expect_eq '"token-bucket"' "$(json_field "$OUT" algorithm)" "algorithm with -b alone"
  expect_eq 1 "$(json_field "$OUT" burst)" "burst"
  expect_status 0 rl --json status smooth exact
  expect_contains "$OUT" '"key":"smooth","algorithm":"token-bucket"' "status --json"
  expect_contains "$OUT" '"burst":1' "status --json"
  expect_contains "$OUT" '"key":"exact","algorithm":"sliding-log"' "status --json"
  # The smooth key holds one token: a second try at once is limited.
  expect_status 1 rl try smooth -r 4/min -b 1
  # A burst for a window algorithm is still a usage error.
  expect_status 2 rl try window -r 4/min -b 2 -a fixed-window
  expect_one_line
  # Without -a, five calls in a row under 5/d: exactly five granted, then limited.
  local i
  for i in 1 2 3 4 5; do
    expect_status 0 rl try daily -r 5/d || return
  done
  expect_status 1 rl try daily -r 5/d
  expect_contains "$ERR" '"daily" limited (sliding-log 5/d)' "stderr"
}

# A call that names no algorithm uses the key's own; one that names another is refused.
test_a_key_keeps_its_algorithm_when_a_call_names_none() {
  local algorithm json status
  for algorithm in $ALGORITHMS; do
    expect_status 0 rl try "own-$algorithm" -r 5/d -a "$algorithm" || continue
    # Granted, or limited for the leaky bucket, whose next output time is hours away.
    status=0
    [ "$algorithm" = leaky-bucket ] && status=1
    expect_status $status rl --json try "own-$algorithm" -r 5/d || continue
    expect_eq "\"$algorithm\"" "$(json_field "$OUT" algorithm)" "algorithm of own-$algorithm"
    json=$(rl --json status "own-$algorithm")
    expect_contains "$json" "\"algorithm\":\"$algorithm\"" "status of own-$algorithm"
    if [ "$algorithm" != token-bucket ]; then
      # -b alone asks for a token bucket.
      expect_status 2 rl try "own-$algorithm" -r 5/d -b 5
      expect_contains "$ERR" "is limited by $algorithm, not token-bucket" "stderr"
    fi
  done
  # The sliding log counts what was granted under its own rules: 2 taken of 5, so 3 more.
  expect_status 0 rl try own-sliding-log -r 5/d
  expect_status 0 rl try own-sliding-log -r 5/d
  expect_status 0 rl try own-sliding-log -r 5/d
  expect_status 1 rl try own-sliding-log -r 5/d
}

# A fresh key belongs to no algorithm: forgetting it changes no decision, so on both stores
# it may be taken up by another algorithm once it is fresh, collected or not.
test_a_fresh_key_may_change_algorithm_on_every_store() {
  # The fixed window is fresh when its 2 s window ends (at least a second away), the token
  # bucket a second after its grant: time enough for the next process to start.
  ensure_window_margin 2 1
  expect_status 0 rl try fresh -r 2/2s -a fixed-window
  expect_status 2 rl try fresh -r 2/2s -a token-bucket
  sleep 2.1
  expect_status 0 rl try fresh -r 2/2s -a token-bucket
  expect_status 2 rl try fresh -r 2/2s -a fixed-window
}

test_the_reset_hint_is_a_command_that_works() {
  # Pasted into a shell, the suggested command forgets exactly that key, whatever its bytes.
  local key hint
  for key in 'my key' "it's" $'new\nline' '-dash' 'quo"te'; do
    expect_status 0 rl try -r 5/d -- "$key" || continue
    expect_status 2 rl try -r 5/d -a fixed-window -- "$key" || continue
    expect_one_line
    hint=$(sed -n 's/.*`ratelimit \(reset .*\)`.*/\1/p' <<<"$ERR")
    expect_true "no reset hint in: $ERR" [ -n "$hint" ] || continue
    eval "rl $hint"
    expect_status 0 rl try -r 5/d -a fixed-window -- "$key"
  done
}

test_burst_with_a_window_algorithm_exits_2() {
  local algorithm
  for algorithm in fixed-window sliding-window sliding-log; do
    for command in try wait; do
      expect_status 2 rl "$command" k -r 5/s -a "$algorithm" -b 3 || continue
      expect_one_line
      expect_contains "$ERR" "--burst does not apply to $algorithm" "stderr"
    done
    expect_status 125 rl run k -r 5/s -a "$algorithm" --burst 3 -- true
  done
  expect_status 0 rl try tb -r 5/s -a token-bucket -b 3
  expect_status 0 rl try lb -r 5/s -a leaky-bucket -b 3
}

test_cost_above_what_a_limit_holds_exits_2() {
  local algorithm
  for algorithm in $ALGORITHMS; do
    expect_status 2 rl try "c-$algorithm" -r 5/s -a "$algorithm" -c 6 || continue
    expect_one_line
    expect_contains "$ERR" "cost 6 can never be granted: $algorithm 5/s holds at most 5" "stderr"
    expect_status 2 rl wait "c-$algorithm" -r 5/s -r 3/min -a "$algorithm" -c 4
    expect_contains "$ERR" "3/min holds at most 3" "stderr"
    expect_status 0 rl try "c-$algorithm" -r 5/s -a "$algorithm" -c 5
  done
  # The token bucket holds its burst, whatever N is.
  expect_status 0 rl try big -r 5/s -a token-bucket -b 8 -c 8
  expect_status 2 rl try small -r 5/s -a token-bucket -b 2 -c 3
  expect_contains "$ERR" "holds at most 2" "stderr"
  # The leaky bucket admits at most N in any PERIOD: its queue depth bounds waiting, not
  # cost.
  expect_status 2 rl try lb-over -r 1/s -a leaky-bucket -b 2 -c 2
  expect_contains "$ERR" "leaky-bucket 1/s holds at most 1" "stderr"
  expect_status 0 rl try queue -r 5/s -a leaky-bucket -b 1 -c 2
}

test_a_leaky_bucket_spaces_costs_so_that_no_period_holds_more_than_n() {
  # 3 then 5 units at 5/2s: (3 + 5 - 1) intervals of 400 ms apart (2.8 s), not 3 (1.2 s),
  # less the time the second process took to start.
  expect_status 0 rl try lb -r 5/2s -a leaky-bucket -c 3
  expect_status 1 rl --json try lb -r 5/2s -a leaky-bucket -c 5
  local retry
  retry=$(json_field "$OUT" retry_after_ms)
  expect_true "retry_after_ms $retry in (2000, 2800]" test "$retry" -gt 2000 -a "$retry" -le 2800
  # A wait whose own cost is more than the queue holds is still accepted.
  expect_status 0 rl wait deep -r 20/s -a leaky-bucket -b 1 -c 3
}

# --- behaviour that only concurrency shows --------------------------------------------

test_leaky_bucket_five_tries_at_once_admit_one() {
  # 5/10s: one output slot every 2 s, so five processes started together all fall within
  # the first slot even on a loaded machine; a token bucket grants all five.
  local algorithm expected i granted pid pids
  for algorithm in leaky-bucket token-bucket; do
    pids=()
    for i in 1 2 3 4 5; do
      "$RATELIMIT" try "once-$algorithm" -r 5/10s -a "$algorithm" -q &
      pids+=($!)
    done
    # Each by its PID: `wait -n` can miss a job that ended before it was called.
    granted=0
    for pid in "${pids[@]}"; do
      wait "$pid" && granted=$((granted + 1))
    done
    expected=1
    [ "$algorithm" = token-bucket ] && expected=5
    expect_eq "$expected" "$granted" "$algorithm: tries granted of 5 at once on 5/10s"
  done
}

# --- several limits -----------------------------------------------------------------------

test_several_limits_name_the_binding_limit() {
  # Token bucket, 5/10s and 20/min: cost 5 empties the first bucket (a token every 2 s, so
  # that slow process starts cannot let one in).
  expect_status 0 rl try multi -r 5/10s -r 20/min -c 5 -a token-bucket --json || return
  expect_eq 5 "$(top_field "$OUT" limit)" "binding limit after the grant"
  expect_eq 10000 "$(top_field "$OUT" period_ms)" "binding period"
  expect_eq 0 "$(top_field "$OUT" remaining)" "remaining"
  expect_contains "$OUT" '"limits":[{"limit":5,"period_ms":10000,"burst":5,"binding":true,' \
    "limits"
  expect_contains "$OUT" '{"limit":20,"period_ms":60000,"burst":20,"binding":false,"remaining":15,'
  expect_status 1 rl try multi -r 5/10s -r 20/min -c 5 -a token-bucket --json
  expect_eq false "$(top_field "$OUT" allowed)" "allowed"
  expect_eq 5 "$(top_field "$OUT" limit)" "binding limit when the second is refused"
  expect_contains "$ERR" "(token-bucket 5/10s, burst 5)" "denial line"
  # With bursts of 20 the first bucket holds 20 too: now the per-minute limit binds.
  expect_status 0 rl try multi2 -r 5/10s -r 20/min -b 20 -c 20 --json
  expect_status 1 rl try multi2 -r 5/10s -r 20/min -b 20 -c 5 --json || return
  expect_eq 20 "$(top_field "$OUT" limit)" "binding limit"
  expect_eq 60000 "$(top_field "$OUT" period_ms)" "binding period"
  local retry
  retry=$(top_field "$OUT" retry_after_ms)
  # Five tokens of 20/min take 15 s; of 5/10s, 10 s.
  expect_true "retry_after_ms $retry, expected about 15000" in_range "$retry" 14000 15000
  expect_contains "$OUT" '"binding":false,"remaining":0,"retry_after_ms":' "limits"
  expect_contains "$ERR" "(token-bucket 20/min, burst 20)" "denial line"
}

test_several_limits_wait_sleeps_until_all_admit() {
  # Sliding log, 2/1s and 3/4s. Two grants fill the first; a wait then takes the third
  # of 3/4s when 2/1s admits (within 1 s); the next wait needs both and 3/4s binds until
  # the first grant is 4 s old.
  local started elapsed waited
  started=$(now_us)
  expect_status 0 rl try both -a sliding-log -r 2/1s -r 3/4s
  expect_status 0 rl try both -a sliding-log -r 2/1s -r 3/4s
  expect_status 1 rl try both -a sliding-log -r 2/1s -r 3/4s --json
  expect_eq 2 "$(top_field "$OUT" limit)" "binding limit while the first is full"
  expect_status 0 rl wait both -a sliding-log -r 2/1s -r 3/4s --json || return
  expect_eq 2 "$(top_field "$OUT" limit)" "binding limit of the first wait"
  waited=$(top_field "$OUT" waited_ms)
  expect_true "first wait slept $waited ms, expected up to 1000" [ "$waited" -le 1010 ]
  expect_status 0 rl wait both -a sliding-log -r 2/1s -r 3/4s --json || return
  elapsed=$((($(now_us) - started) / 1000))
  expect_eq 3 "$(top_field "$OUT" limit)" "binding limit of the second wait"
  expect_eq 4000 "$(top_field "$OUT" period_ms)" "binding period of the second wait"
  expect_true "the second wait returned after $elapsed ms, before the 3/4s limit admitted" \
    [ "$elapsed" -ge 4000 ]
}

# --- an interrupted wait gives back ------------------------------------------------------

# retry_after_ms of a try on KEY with ARGS (which is refused).
retry_of() {
  local out
  out=$("$RATELIMIT" try "$@" -q --json)
  json_field "$out" retry_after_ms
}

test_interrupted_wait_gives_back_for_every_algorithm() {
  local algorithm args before reserved after pid status i
  for algorithm in $ALGORITHMS; do
    args=(-a "$algorithm" -r 1/min)
    # Window algorithms: stay inside one minute for the few seconds this takes.
    case $algorithm in
    fixed-window | sliding-window) ensure_window_margin 60 8 ;;
    esac
    expect_status 0 rl try "int-$algorithm" "${args[@]}" || continue
    before=$(retry_of "int-$algorithm" "${args[@]}")
    "$RATELIMIT" wait "int-$algorithm" "${args[@]}" -q &
    pid=$!
    # Until the waiter has reserved: the next slot moves a period or more further away.
    reserved=$before
    for i in $(seq 100); do
      reserved=$(retry_of "int-$algorithm" "${args[@]}")
      [ "$reserved" -gt $((before + 30000)) ] && break
      sleep 0.05
    done
    if [ "$reserved" -le $((before + 30000)) ]; then
      fail "$algorithm: the waiter never reserved (retry $before, then $reserved ms)"
      kill "$pid"
      continue
    fi
    kill -TERM "$pid"
    wait "$pid"
    status=$?
    expect_eq 143 "$status" "$algorithm: exit status of the interrupted wait"
    after=$(retry_of "int-$algorithm" "${args[@]}")
    expect_true "$algorithm: the reservation was not given back (retry $before ms before \
the waiter, $reserved with it, $after after it)" [ "$after" -le "$before" ]
  done
}

test_interrupted_waiters_reserved_at_one_time_both_give_back() {
  # Sliding log, 3 per 4 s: 2 taken, then 1. Both waiters get the time the first grant
  # leaves the window; interrupted, each gives its slot back.
  local args=(-a sliding-log -r 3/4s) before reserved after pids=() pid i
  expect_status 0 rl try shared "${args[@]}" -c 2 || return
  expect_status 0 rl try shared "${args[@]}" || return
  before=$(retry_of shared "${args[@]}" -c 2)
  for i in 1 2; do
    "$RATELIMIT" wait shared "${args[@]}" -q &
    pids+=($!)
  done
  # Until both have reserved: a cost of 2 must then wait for the first waiter's slot to
  # leave the window too, a period later.
  for i in $(seq 100); do
    reserved=$(retry_of shared "${args[@]}" -c 2)
    [ "$reserved" -gt $((before + 2000)) ] && break
    sleep 0.05
  done
  expect_true "the waiters never reserved (retry $before, then $reserved ms)" \
    [ "$reserved" -gt $((before + 2000)) ]
  kill -TERM "${pids[@]}"
  for pid in "${pids[@]}"; do
    wait "$pid"
    expect_eq 143 "$?" "exit status of an interrupted waiter"
  done
  after=$(retry_of shared "${args[@]}" -c 2)
  expect_true "not both given back (retry $before ms before the waiters, $reserved with them, \
$after after)" [ "$after" -le "$before" ]
}

test_sliding_log_forgets_entries_that_left_the_window() {
  on_store sqlite || return 0
  local i
  for i in $(seq 30); do
    rl -q try log -a sliding-log -r 5/200ms
    sleep 0.02
  done
  local rows
  rows=$(sqlite3 "$DB" 'SELECT count(*) FROM grant_log')
  # 30 tries over >= 600 ms at 5 per 200 ms: a log that kept everything would hold ~15
  # grants; one that forgets holds at most the last window's 5 (plus the latest one).
  expect_true "the log holds $rows entries" [ "$rows" -le 6 ]
}

# --- several limits on one key, changing between calls -------------------------------------

# The times of the grants in KEY's sliding log, oldest first, in the store's unit.
log_times() {
  if [ "$STORE" = redis ]; then
    rcli ZRANGE "ratelimit:{$1}:t" 0 -1 WITHSCORES | awk 'NR % 2 == 0'
  else
    sqlite3 "$DB" "SELECT at FROM grant_log JOIN keys ON keys.id = key_id
      WHERE keys.name = CAST('$1' AS BLOB) ORDER BY at"
  fi
}

# Sleeps until TARGET (milliseconds since the epoch).
sleep_until_ms() {
  local left=$(($1 - $(now_ms)))
  [ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
  return 0
}

# The start of the next window of PERIOD milliseconds aligned to the epoch.
next_window_ms() { echo $((($(now_ms) / $1 + 1) * $1)); }

# How many of TRIES tries on KEY with ARGS are granted.
grants_of() {
  local tries=$1 key=$2 granted=0 i
  shift 2
  for ((i = 0; i < tries; i++)); do
    rl -q try "$key" "$@" && granted=$((granted + 1))
  done
  echo "$granted"
}

# Tries KEY with ARGS at TARGET (milliseconds since the epoch), which must be decided
# before DEADLINE: 0 when granted in time, 1 (failing the test) when refused in time, 2 when
# the call ended after DEADLINE (a loaded machine: the attempt proves nothing).
try_between() {
  local target=$1 deadline=$2
  shift 2
  sleep_until_ms "$target"
  "$RATELIMIT" try -q "$@" 2>"$TEST_DIR/stderr"
  local status=$?
  [ "$(now_ms)" -lt "$deadline" ] || return 2
  [ $status = 0 ] && return 0
  fail "refused in time: $* (stderr: $(cat "$TEST_DIR/stderr"))"
  return 1
}

# Calls SHORT on a key of ALGORITHM at the start (+50 ms) of each of STEPS steps of a second
# in an aligned window of WINDOW_MS, then tries LONG TRIES times within that window, and
# sets GRANTED to how many of those were granted. Three attempts, each on a key of its own,
# for one whose calls all fall where they should. Two tries suffice where one grant is right
# (a second is one too many), and leave a loaded machine, where a call may take 200 ms, the
# time to make them inside the window.
longer_after_shorter() {
  local algorithm=$1 short=$2 steps=$3 long=$4 window=$5 tries=$6 attempt start step status
  for attempt in 1 2 3; do
    start=$(next_window_ms "$window")
    for ((step = 0; step < steps; step++)); do
      try_between $((start + step * 1000 + 50)) $((start + step * 1000 + 1000)) \
        "longer-$attempt" -a "$algorithm" -r "$short"
      status=$?
      [ $status = 0 ] || break
    done
    [ $status = 1 ] && return 1
    [ $status = 2 ] && continue
    GRANTED=$(grants_of "$tries" "longer-$attempt" -a "$algorithm" -r "$long")
    [ "$(now_ms)" -lt $((start + window)) ] && return 0
  done
  fail "in three attempts, the calls never fell where they should (a loaded machine)"
  return 1
}

# A call naming a longer period counts every grant of the key in its window, those made
# before the window the stored limit keeps: 2/s once every second on a sliding window
# (never fresh between: the window before still weighs), then 3/3s has no room left in
# that aligned 3 s window.
test_a_longer_window_counts_the_grants_before_the_stored_one() {
  longer_after_shorter sliding-window 2/s 3 3/3s 3000 2 || return
  expect_eq 0 "$GRANTED" "grants at 3/3s after three at 2/s"
}

# The same on a fixed window, as the example of the man page: 1/s at the start of four
# seconds, then 5/5s during the fourth has room for one, not four. Only on
# SQLite: the key is fresh at each boundary, when Redis lets it expire, and a key forgotten
# starts afresh (as the man page says); SQLite forgets a fresh key only when gc finds it so.
test_a_longer_fixed_window_counts_the_grants_before_the_stored_one() {
  on_store sqlite || return 0
  longer_after_shorter fixed-window 1/s 4 5/5s 5000 2 || return
  expect_eq 1 "$GRANTED" "grants at 5/5s after four at 1/s"
}

# A limit named before is remembered and counts every grant since, exactly: 5/5s once, then
# the shorter limit three times, then 5/5s again has room for one, not four (fixed window)
# or three (sliding window). The remembered limit keeps the key from being fresh, on every
# store. Steps of a second, and two tries at the end (a second grant is already one too
# many), so that a loaded machine, where a call may take 200 ms, still makes each step's
# two calls and the last tries inside the window.
test_a_remembered_window_counts_the_grants_under_other_limits() {
  local attempt start step algorithm short fixed sliding status
  for attempt in 1 2 3; do
    start=$(next_window_ms 5000)
    status=0
    for step in 0 1 2 3; do
      for algorithm in fixed-window sliding-window; do
        short=1/s
        [ $algorithm = sliding-window ] && short=2/s # the window before weighs
        [ $step = 0 ] && short=5/5s
        try_between $((start + step * 1000 + 50)) $((start + step * 1000 + 1000)) \
          "$algorithm-$attempt" -a $algorithm -r $short
        status=$?
        [ $status = 0 ] || break 2
      done
    done
    [ $status = 1 ] && return
    [ $status = 2 ] && continue
    fixed=$(grants_of 2 "fixed-window-$attempt" -a fixed-window -r 5/5s)
    sliding=$(grants_of 2 "sliding-window-$attempt" -a sliding-window -r 5/5s)
    [ "$(now_ms)" -lt $((start + 5000)) ] && break
    status=2
  done
  [ $status = 0 ] || fail "in three attempts, the calls never fell where they should"
  expect_eq 1 "$fixed" "fixed window: grants at 5/5s after four"
  expect_eq 1 "$sliding" "sliding window: grants at 5/5s after four"
}

# Callers alternating 600/min and 10/s on one sliding-window key: the key stays readable
# (it once counted an unknown number twice at each change of limits, and was damaged on
# the 16th round) and usable (one grant at 600/min once held 10/s back for the rest of the
# minute).
test_sliding_window_alternating_limits_stays_usable() {
  local i statuses=
  for i in $(seq 20); do
    rl -q try alternating -a sliding-window -r 600/min
    statuses+="$? "
    rl -q try alternating -a sliding-window -r 10/s
    statuses+="$? "
  done
  expect_eq "" "$(echo $statuses | tr ' ' '\n' | grep -v '^[01]$')" "statuses other than 0 and 1"
  expect_status 0 rl status alternating
  # Two seconds on, 10/s has room again, and so has 600/min, which the 10/s calls counted.
  sleep 2.1
  expect_status 0 rl try alternating -a sliding-window -r 10/s
  expect_status 0 rl try alternating -a sliding-window -r 600/min
}

# Sliding log: waiters at 600/min never land on the instant of a reservation made at 2/5s
# (2/2500ms here), which would leave it with more than 2 in its period: they are granted
# just after it (a nanosecond on SQLite, a microsecond on Redis).
test_sliding_log_looser_waiters_keep_off_a_stricter_reservation() {
  local args=(-a sliding-log) pids=() i times reserved at_reserved=0 after=0 time
  expect_status 0 rl try protect "${args[@]}" -r 2/2500ms || return
  expect_status 0 rl try protect "${args[@]}" -r 2/2500ms || return
  rl -q wait protect "${args[@]}" -r 2/2500ms &
  pids+=($!)
  wait_for_reservation protect 1500 || return
  for i in 1 2 3 4 5; do
    rl -q wait protect "${args[@]}" -r 600/min &
    pids+=($!)
  done
  for i in "${pids[@]}"; do
    wait "$i" || fail "a waiter exited $?"
  done
  times=$(log_times protect)
  reserved=$(echo "$times" | sed -n 3p)
  for time in $times; do
    [ "$time" -eq "$reserved" ] && at_reserved=$((at_reserved + 1))
    [ "$time" -gt "$reserved" ] && after=$((after + 1))
  done
  expect_eq 1 "$at_reserved" "grants at the reservation's instant (log: $(echo $times))"
  expect_eq 5 "$after" "grants after it"
}

# --- --json for every algorithm ------------------------------------------------------------

# The bounds of ceil((window_end - decision) / 1 ms) for a decision made between LO and HI
# (microseconds), for windows of PERIOD_MS aligned to the epoch, plus EXTRA_MS; empty when
# LO and HI fall in different windows.
window_reset_range() {
  local lo=$1 hi=$2 period_ms=$3 extra=$4
  local period=$((period_ms * 1000))
  [ $((lo / period)) = $((hi / period)) ] || return 0
  local end=$(((lo / period + 1) * period))
  echo "$((((end - hi) + 999) / 1000 + extra)) $((((end - lo) + 999) / 1000 + extra))"
}

test_json_fields_for_every_algorithm() {
  local algorithm lo hi range low high out remaining reset attempt field
  for algorithm in $ALGORITHMS; do
    for attempt in 1 2 3; do
      lo=${EPOCHREALTIME/[.,]/}
      expect_status 0 rl try "json-$algorithm-$attempt" -a "$algorithm" -r 3/s --json || break
      hi=${EPOCHREALTIME/[.,]/}
      for field in key allowed algorithm limit period_ms cost remaining retry_after_ms \
        reset_after_ms; do
        expect_contains "$OUT" "\"$field\":" "JSON of $algorithm"
      done
      expect_eq "\"json-$algorithm-$attempt\"" "$(json_field "$OUT" key)" "key"
      expect_eq "\"$algorithm\"" "$(json_field "$OUT" algorithm)" "algorithm"
      expect_eq true "$(json_field "$OUT" allowed)" "allowed"
      expect_eq 3 "$(json_field "$OUT" limit)" "limit"
      expect_eq 1000 "$(json_field "$OUT" period_ms)" "period_ms"
      case $algorithm in
      token-bucket | leaky-bucket) expect_eq 3 "$(json_field "$OUT" burst)" "burst" ;;
      *) expect_eq "" "$(json_field "$OUT" burst)" "no burst for $algorithm" ;;
      esac
      expect_eq 1 "$(json_field "$OUT" cost)" "cost"
      expect_eq 0 "$(json_field "$OUT" retry_after_ms)" "$algorithm retry_after_ms"
      remaining=$(json_field "$OUT" remaining)
      reset=$(json_field "$OUT" reset_after_ms)
      case $algorithm in
      token-bucket)
        # Full again one interval later: 333.333334 ms, rounded up.
        expect_eq 2 "$remaining" "$algorithm remaining"
        expect_eq 334 "$reset" "$algorithm reset_after_ms (until full)"
        ;;
      leaky-bucket)
        # The queue is empty once the grant has left: the room in it is whole. Fresh two
        # intervals later still, when a request of cost 3 would leave at once: 1000 ms.
        expect_eq 3 "$remaining" "$algorithm remaining (room in the queue)"
        expect_eq 1001 "$reset" "$algorithm reset_after_ms (until fresh)"
        ;;
      sliding-log)
        expect_eq 2 "$remaining" "$algorithm remaining"
        expect_eq 1000 "$reset" "$algorithm reset_after_ms (until the entry expires)"
        ;;
      fixed-window | sliding-window)
        expect_eq 2 "$remaining" "$algorithm remaining"
        # Until the window ends; the sliding window's count weighs one window more.
        local extra=0
        [ $algorithm = sliding-window ] && extra=1000
        range=$(window_reset_range "$lo" "$hi" 1000 $extra)
        [ -z "$range" ] && continue # straddled a second: try again
        read -r low high <<<"$range"
        expect_true "$algorithm reset_after_ms $reset not within [$low, $high]" \
          in_range "$reset" "$low" "$high"
        ;;
      esac
      break
    done
    # Refused (3/10s, so that a loaded machine cannot refill it between tries): a retry
    # after the slot, rounded up to at least 1 ms.
    local limit_retry=3334 left=0
    case $algorithm in
    fixed-window | sliding-log) limit_retry=10000 ;;
    sliding-window) limit_retry=20000 ;;
    leaky-bucket) left=3 ;; # the queue is empty, only tries came
    esac
    for attempt in 1 2 3 4 5; do
      out=$("$RATELIMIT" try "json-$algorithm-full" -a "$algorithm" -r 3/10s --json -q) || break
    done
    expect_eq false "$(json_field "$out" allowed)" "$algorithm allowed when full"
    expect_eq $left "$(json_field "$out" remaining)" "$algorithm remaining when refused"
    local retry
    retry=$(json_field "$out" retry_after_ms)
    expect_true "$algorithm retry_after_ms $retry not in [1, $limit_retry]" \
      in_range "$retry" 1 $limit_retry
    reset=$(json_field "$out" reset_after_ms)
    expect_true "$algorithm reset_after_ms $reset not in [$retry, 20000]" \
      in_range "$reset" "$retry" 20000
  done
}

run_suite
