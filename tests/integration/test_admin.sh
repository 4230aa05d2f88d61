#!/usr/bin/env bash
# status, reset and gc: what they show and forget, odd keys, garbage collected on the way.
. "$(dirname "$0")/lib.sh"

PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3

# Runs a Python expression on the JSON read from stdin, bound to `j`.
json_eval() {
  "$PYTHON" -c 'import json, sys
j = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1"
}

test_status_does_not_consume() {
  rl try k -r 3/min
  local i
  for i in 1 2 3 4 5; do
    expect_status 0 rl status k >/dev/null
    expect_status 0 rl --json status k >/dev/null
  done
  expect_status 0 rl --json status k
  expect_eq 2 "$(json_eval 'j[0]["remaining"]' <<<"$OUT")" "remaining shown"
  expect_status 0 rl --json try k -r 3/min
  expect_eq 1 "$(json_field "$OUT" remaining)" "remaining after the second try"
  expect_status 0 rl try k -r 3/min
  expect_status 1 rl try k -r 3/min -q
}

test_status_shows_the_limits_in_force_not_those_no_longer_given() {
  # Slow rates, so that the key is not fresh (and gone from Redis) before status looks.
  expect_status 0 rl try q -r 1/min -a token-bucket
  expect_status 0 rl try q -r 1000/h -a token-bucket
  expect_status 0 rl status q
  expect_contains "$OUT" "1000/h burst 1000"
  expect_true "1/min lingers: $OUT" test "${OUT#*1/min}" = "$OUT"
  # A denied call with other limits replaces them too.
  expect_status 0 rl try d -r 1/min -a token-bucket
  expect_status 1 rl try d -r 1/h -a token-bucket
  expect_status 0 rl status d
  expect_contains "$OUT" "1/h burst 1"
  expect_true "1/min lingers: $OUT" test "${OUT#*1/min}" = "$OUT"
}

test_status_json_fields() {
  rl try api -r 2/s -r 5/min -a token-bucket
  rl try api -r 2/s -r 5/min -a token-bucket
  expect_status 0 rl --json status api
  local fields
  fields=$(json_eval '" ".join(sorted(j[0]))' <<<"$OUT")
  expect_eq "adaptive algorithm budget burst counters idle_ms key last_use limit limits period_ms policies remaining reset_after_ms retry_after_ms" \
    "$fields" "fields"
  expect_eq api "$(json_eval 'j[0]["key"]' <<<"$OUT")" "key"
  expect_eq token-bucket "$(json_eval 'j[0]["algorithm"]' <<<"$OUT")" "algorithm"
  expect_eq 0 "$(json_eval 'j[0]["remaining"]' <<<"$OUT")" "remaining"
  expect_eq 2 "$(json_eval 'len(j[0]["limits"])' <<<"$OUT")" "limits"
  # Limited by 2/s: the next token is about half a second away, a full bucket a second.
  local retry reset
  retry=$(json_eval 'j[0]["retry_after_ms"]' <<<"$OUT")
  expect_true "retry_after_ms $retry in (0, 500]" test "$retry" -gt 0 -a "$retry" -le 500
  expect_eq 2 "$(json_eval 'j[0]["limit"]' <<<"$OUT")" "binding limit"
  expect_eq 1000 "$(json_eval 'j[0]["period_ms"]' <<<"$OUT")" "binding period"
  expect_eq True "$(json_eval 'j[0]["limits"][0]["binding"]' <<<"$OUT")" "binding flag"
  reset=$(json_eval 'j[0]["limits"][1]["reset_after_ms"]' <<<"$OUT")
  expect_true "reset_after_ms of 5/min $reset in (23000, 24000]" \
    test "$reset" -gt 23000 -a "$reset" -le 24000
  expect_true "last_use is an ISO time in UTC" \
    "$PYTHON" -c 'import datetime, sys, time
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
sys.exit(0 if abs(t.timestamp() - time.time()) < 60 else 1)' "$(json_eval 'j[0]["last_use"]' <<<"$OUT")"
}

test_status_human_table_is_aligned() {
  rl try api -r 10/min -a token-bucket
  rl try a-much-longer-key -r 5/min -a sliding-window
  rl try q -r 1/h -a leaky-bucket -b 3
  expect_status 0 rl status
  expect_eq 4 "$(printf '%s\n' "$OUT" | wc -l)" "lines"
  local header
  header=$(printf '%s\n' "$OUT" | head -1)
  expect_contains "$header" "KEY"
  expect_contains "$header" "REMAINING"
  expect_contains "$header" "RETRY AFTER"
  expect_contains "$header" "RESET AFTER"
  expect_contains "$header" "LAST USE"
  # Every column starts at the same offset on every line.
  local column prefix offset line
  for column in ALGORITHM LIMITS REMAINING "RETRY AFTER" "RESET AFTER" "LAST USE"; do
    prefix=${header%%"$column"*}
    offset=${#prefix}
    while IFS= read -r line; do
      expect_true "column $column at $offset in: $line" \
        test "${line:$((offset - 2)):2}" = "  " -a "${line:$offset:1}" != " "
    done <<<"$OUT"
  done
  expect_contains "$OUT" '"a-much-longer-key"  sliding-window  5/min'
  expect_contains "$OUT" '"api"'
  expect_contains "$OUT" 'token-bucket'
  expect_contains "$OUT" '10/min burst 10'
  expect_contains "$OUT" '1/h burst 3'
  # Sorted by key.
  expect_eq '"a-much-longer-key" "api" "q"' \
    "$(printf '%s\n' "$OUT" | tail -n +2 | awk '{print $1}' | tr '\n' ' ' | sed 's/ $//')" "order"
}

test_status_without_keys_lists_every_key_and_nothing_when_empty() {
  expect_status 0 rl status
  expect_eq "" "$OUT" "empty database"
  expect_status 0 rl --json status
  expect_eq "[]" "$OUT" "empty database as JSON"
  rl try b -r 1/min
  rl try a -r 1/min
  rl try c -r 1/min
  expect_status 0 rl --json status
  expect_eq "['a', 'b', 'c']" "$(json_eval '[o["key"] for o in j]' <<<"$OUT")" "keys"
}

test_status_of_an_unknown_key_exits_1_and_shows_the_others() {
  rl try known -r 1/min
  expect_status 1 rl status known unknown
  expect_one_line
  expect_contains "$ERR" 'ratelimit: unknown key "unknown"'
  expect_contains "$OUT" '"known"'
  expect_status 1 rl --json status unknown known
  expect_eq "['known']" "$(json_eval '[o["key"] for o in j]' <<<"$OUT")" "keys"
  expect_status 2 rl status ""
}

test_reset_is_idempotent() {
  rl try k -r 1/min
  expect_status 1 rl try k -r 1/min -q
  expect_status 0 rl --json reset k
  expect_eq 1 "$(json_field "$OUT" removed)" "removed"
  expect_status 0 rl try k -r 1/min
  expect_status 0 rl reset k
  expect_eq "" "$OUT$ERR" "output"
  expect_status 0 rl --json reset k never-seen
  expect_eq 0 "$(json_field "$OUT" removed)" "removed again"
  expect_status 0 rl reset never-seen
  # A reset key may be taken up by another algorithm.
  expect_status 0 rl try k -r 1/min -a fixed-window
}

test_reset_all() {
  rl try a -r 1/min
  rl try b -r 1/min -a sliding-log
  expect_status 0 rl --json reset --all
  expect_eq 2 "$(json_field "$OUT" removed)" "removed"
  expect_status 0 rl status
  expect_eq "" "$OUT" "status after reset --all"
  expect_status 0 rl try a -r 1/min
  expect_status 0 rl try b -r 1/min -a sliding-log
  expect_status 0 rl reset --all
}

test_reset_usage() {
  expect_status 2 rl reset
  expect_one_line
  expect_contains "$ERR" "no key given"
  expect_status 2 rl reset --all k
  expect_contains "$ERR" "not both"
}

test_reset_forgets_a_damaged_key() {
  rl try k -r 1/min
  if [ "$STORE" = redis ]; then
    rcli HSET 'ratelimit:{k}' limits 1 >/dev/null
  else
    sqlite3 "$DB" "UPDATE keys SET limits = x'01'"
  fi
  expect_status 3 rl try k -r 1/min
  expect_contains "$ERR" "damaged"
  expect_status 0 rl reset k
  expect_status 0 rl try k -r 1/min
}

# A sliding-window key as an earlier version wrote it (SQLite schema 4): no count of what
# the key granted before its limits, and a first slot that is the window's start, not the
# latest grant. It reads (what it granted unknown, any number), its own limit decides as
# before, and a decision writes it back with the count, saturated.
test_a_window_key_of_an_earlier_version_reads() {
  ensure_window_margin 60 3 # the minute's two grants stay its own
  expect_status 0 rl try old -a sliding-window -r 5/min || return
  expect_status 0 rl try old -a sliding-window -r 5/min || return
  if [ "$STORE" = redis ]; then
    local words minute
    read -ra words <<<"$(rcli HGET 'ratelimit:{old}' limits)"
    minute=$(($(now_us) / 60000000 * 60000000))
    rcli HSET 'ratelimit:{old}' limits \
      "${words[1]} ${words[2]} ${words[3]} $minute ${words[5]} ${words[6]}" >/dev/null
  else
    local hex minute byte le=
    hex=$(sqlite3 "$DB" "SELECT hex(limits) FROM keys WHERE name = CAST('old' AS BLOB)")
    minute=$(($(date +%s%N) / 60000000000 * 60000000000))
    for i in 0 1 2 3 4 5 6 7; do
      printf -v byte '%02X' $(((minute >> (8 * i)) & 255))
      le+=$byte
    done
    sqlite3 "$DB" "UPDATE keys SET limits = x'${hex:16:48}$le${hex:80:32}';
      PRAGMA user_version = 4; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  fi
  expect_status 0 rl --json status old
  expect_eq 3 "$(json_field "$OUT" remaining)" "remaining of 5/min after 2"
  expect_status 0 rl try old -a sliding-window -r 5/min
  expect_status 0 rl --json status old
  expect_eq 2 "$(json_field "$OUT" remaining)" "remaining of 5/min after 3"
  if [ "$STORE" = redis ]; then
    expect_eq 1125899906842624 "$(rcli HGET 'ratelimit:{old}' limits | cut -d' ' -f1)" \
      "what the key granted, written back"
  else
    expect_eq 8 "$(sqlite3 "$DB" 'PRAGMA user_version')" "schema version after the upgrade"
    expect_eq 0000000000000400 \
      "$(sqlite3 "$DB" "SELECT hex(substr(limits, 1, 8)) FROM keys WHERE name = CAST('old' AS BLOB)")" \
      "what the key granted, written back"
  fi
}

# Sets the burst of KEY's first limit to BURST, as a damaged database or a hand edit might.
set_stored_burst() {
  local key=$1 burst=$2
  if [ "$STORE" = redis ]; then
    local limits
    limits=$(rcli HGET "ratelimit:{$key}" limits)
    rcli HSET "ratelimit:{$key}" limits "$(echo "$limits" | awk -v b="$burst" '{$3 = b; print}')" >/dev/null
  else
    local hex le
    hex=$(sqlite3 "$DB" "SELECT hex(limits) FROM keys WHERE name = CAST('$key' AS BLOB)")
    le=$(printf '%016x' "$burst" | sed 's/../& /g' | awk '{for (i = NF; i >= 1; i--) printf "%s", $i}')
    sqlite3 "$DB" "UPDATE keys SET limits = x'${hex:0:32}$le${hex:48}' WHERE name = CAST('$key' AS BLOB)"
  fi
}

# Stored state is read with the bounds the parser applies: a burst of 2^62 would overflow
# the bucket's arithmetic, so it is damaged state (exit 3), for status as for decisions.
test_a_stored_value_out_of_bounds_is_damaged_state() {
  rl try k -r 1/min
  set_stored_burst k 4611686018427387904
  expect_status 3 rl status
  expect_one_line
  expect_contains "$ERR" 'the state of key "k" is damaged; forget it with `ratelimit reset k`'
  expect_status 3 rl try k -r 1/min
  expect_contains "$ERR" 'the state of key "k" is damaged'
  expect_status 0 rl reset k
  expect_status 0 rl try k -r 1/min
}

# One damaged key hides no other: status shows the others, names the damaged one on
# stderr, and exits 3 once it has shown them.
test_status_shows_the_other_keys_when_one_is_damaged() {
  rl try a -r 1/min
  rl try b -r 1/min
  rl try c -r 1/min
  set_stored_burst b 4611686018427387904
  expect_status 3 rl status
  expect_one_line
  expect_contains "$ERR" 'the state of key "b" is damaged; forget it with `ratelimit reset b`'
  expect_contains "$OUT" '"a"'
  expect_contains "$OUT" '"c"'
  expect_status 3 rl --json status
  expect_contains "$OUT" '"key":"a"'
  expect_contains "$OUT" '"key":"c"'
  expect_status 3 rl status c b a
  expect_one_line
  expect_contains "$OUT" '"a"'
  expect_contains "$OUT" '"c"'
}

# Decisions collect fresh keys too, now and then: keys meant for an explicit gc are made
# with periods that outlast the commands that make them. Redis has nothing to collect: its
# values expire when fresh (test_redis.sh). A key whose state went keeps its counters, which
# status shows without a state (no "last_use").
test_gc_keeps_busy_keys_and_drops_fresh_ones() {
  on_store sqlite || return 0
  local algorithm
  # The busy fixed window becomes a fresh key's when its minute ends: not during the test.
  ensure_window_margin 60 15
  for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
    rl try "busy-$algorithm" -r 1/min -a "$algorithm"
  done
  for algorithm in token-bucket leaky-bucket fixed-window sliding-window sliding-log; do
    rl try "fresh-$algorithm" -r 1/1s -a "$algorithm"
  done
  # The sliding window remembers the previous window too: 2 periods.
  sleep 2.1
  # Decisions collect a few fresh keys on the way, so a slow run may already have lost one:
  # gc must remove exactly the fresh keys still there, which status does not touch.
  expect_status 0 rl --json status
  local present
  present=$(json_eval '"\n".join("ratelimit: removed \"%s\"" % o["key"] for o in j if o["key"].startswith("fresh-") and "last_use" in o)' <<<"$OUT")
  expect_true "some fresh keys are left for gc" [ -n "$present" ]
  expect_status 0 rl gc -v
  expect_eq "" "$OUT" "stdout of gc -v"
  expect_eq "$present" "$(printf '%s\n' "$ERR" | LC_ALL=C sort)" "lines of gc -v"
  expect_status 0 rl --json status
  expect_eq "['busy-fixed-window', 'busy-leaky-bucket', 'busy-sliding-log', 'busy-sliding-window', 'busy-token-bucket']" \
    "$(json_eval '[o["key"] for o in j if "last_use" in o]' <<<"$OUT")" "keys left with a state"
  expect_eq 0 "$(sqlite3 "$DB" "SELECT count(*) FROM grant_log WHERE key_id NOT IN (SELECT id FROM keys)")" \
    "log entries of removed keys"
  expect_status 0 rl gc
  expect_eq "" "$OUT$ERR" "gc without -v"
  expect_status 0 rl --json gc
  expect_eq '{"removed":0,"keys":[]}' "$OUT"
  # Nothing that mattered was lost: the busy keys are still limited.
  expect_status 1 rl try busy-token-bucket -r 1/min -q
  expect_status 1 rl try busy-sliding-log -r 1/min -a sliding-log -q
}

test_gc_json_names_what_it_removed() {
  on_store sqlite || return 0
  rl try one -r 1/1s
  rl try two -r 1/1s
  sleep 1.1
  # A slow run may have collected "one" while deciding "two": compare with what is there.
  expect_status 0 rl --json status
  local present count
  present=$(json_eval '[o["key"] for o in j if "last_use" in o]' <<<"$OUT")
  count=$(json_eval 'len([o for o in j if "last_use" in o])' <<<"$OUT")
  expect_contains "$present" "'two'" "keys before gc"
  expect_status 0 rl --json gc
  expect_eq "$count" "$(json_eval 'j["removed"]' <<<"$OUT")" "removed"
  expect_eq "$present" "$(json_eval 'sorted(j["keys"])' <<<"$OUT")" "keys"
}

test_decisions_collect_fresh_keys_on_the_way() {
  local i
  for i in $(seq 40); do
    rl try "one-off-$i" -r 1/10ms
  done
  rl try busy -r 1/h
  # Fresh after 10 ms; found by the collector from the next second on (it looks keys up by
  # the second in which they become fresh).
  sleep 1.2
  # Hundreds of decisions in one process (the leaky bucket decides record by record): one
  # in 16 collects up to 32 fresh keys.
  seq 400 | rl pipe busy-pipe -a leaky-bucket -r 100000/s >/dev/null
  expect_eq "['busy']" "$(rl --json status | json_eval '[o["key"] for o in j if o["key"] != "busy-pipe" and "last_use" in o]')" \
    "keys left with a state"
}

test_keys_that_would_control_the_terminal_are_escaped() {
  # A byte that is not UTF-8, a C1 control that starts an escape sequence, a bidi override.
  rl try -r 1/min -- $'raw\xff'
  rl try -r 1/min -- $'csi\xc2\x9b2J'
  rl try -r 1/min -- $'\xe2\x80\xaeevil'
  expect_status 0 rl status
  expect_contains "$OUT" '"raw\xff"'
  expect_contains "$OUT" '"csi\u009b2J"'
  expect_contains "$OUT" '"\u202eevil"'
  expect_true "raw bytes in: $OUT" test "$(printf '%s' "$OUT" | LC_ALL=C grep -c $'[\x80-\xff]')" = 0
}

test_status_aligns_wide_and_zero_width_keys() {
  rl try -r 1/min -- '🔑漢字'
  rl try -r 1/min -- $'zero\xe2\x80\x8bwidth'
  rl try -r 1/min -- 'plain'
  expect_status 0 rl status
  # The algorithm column starts at the same terminal column on every line: wide characters
  # take two columns, zero-width ones none.
  expect_true "algorithm column misaligned in: $OUT" "$PYTHON" -c '
import sys, unicodedata
def width(text):
    return sum(0 if unicodedata.category(c) in ("Mn", "Me", "Cf") else
               2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)
lines = sys.stdin.read().splitlines()
starts = {width(line[:line.index(word)]) for line in lines
          for word in ("ALGORITHM", "token-bucket") if word in line}
sys.exit(0 if len(starts) == 1 and len(lines) == 4 else 1)' <<<"$OUT"
}

test_odd_keys_round_trip() {
  local keys=('quo"te' $'new\nline' 'ütf-8 ключ 🔑' $'tab\there' 'back\slash' ' spaced ' '-dash')
  local key
  for key in "${keys[@]}"; do
    expect_status 0 rl try -r 1/min -- "$key"
  done
  expect_status 0 rl --json status
  printf '%s\0' "${keys[@]}" | sort -z >expected
  "$PYTHON" -c 'import json, sys
sys.stdout.write("".join(o["key"] + "\0" for o in json.load(open(sys.argv[1]))))' <(printf '%s' "$OUT") |
    sort -z >actual
  expect_true "keys from status --json differ" cmp -s expected actual
  # One line per key in the table: the newline is escaped, quotes and backslashes too.
  expect_status 0 rl status
  expect_eq 8 "$(printf '%s\n' "$OUT" | wc -l)" "lines"
  expect_contains "$OUT" '"quo\"te"'
  expect_contains "$OUT" '"new\nline"'
  expect_contains "$OUT" '"tab\there"'
  expect_contains "$OUT" '"back\\slash"'
  expect_contains "$OUT" '"ütf-8 ключ 🔑"'
  # Asked for by name, in every form.
  expect_status 0 rl --json status -- "${keys[@]}"
  expect_eq 7 "$(json_eval 'len(j)' <<<"$OUT")" "keys by name"
  expect_status 1 rl try -r 1/min -q -- $'new\nline'
  expect_status 0 rl reset -- $'new\nline' 'quo"te'
  expect_status 0 rl try -r 1/min -- $'new\nline'
}

test_odd_keys_round_trip_through_gc() {
  on_store sqlite || return 0
  local keys=('quo"te' $'new\nline' 'ütf-8 ключ 🔑' $'tab\there' 'back\slash' ' spaced ' '-dash')
  local key
  printf '%s\0' "${keys[@]}" | sort -z >expected
  for key in "${keys[@]}"; do
    rl try -r 1/1s -- "$key"
  done
  sleep 1.1
  expect_status 0 rl --json gc
  "$PYTHON" -c 'import json, sys
sys.stdout.write("".join(k + "\0" for k in json.load(open(sys.argv[1]))["keys"]))' <(printf '%s' "$OUT") |
    sort -z >actual
  expect_true "keys from gc --json differ" cmp -s expected actual
}

run_suite
