#!/usr/bin/env bash
# --adaptive: a rate learned from the server's answers, under the -r rates as ceilings,
# shared by every process on the key: against the stand-in API with a secret limit, from a
# command's exit status (--backoff-on), in a named limit; what status, --json and metrics
# show of it, and reset.
. "$(dirname "$0")/lib.sh"

# The adaptive object of KEY's status --json, as one line.
adaptive_json() {
  rl --json status "$1" | sed -n 's/.*"adaptive":\(null\|{[^}]*}\).*/\1/p'
}

test_adaptive_finds_a_limit_the_server_keeps_secret() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  # 5 a second, in fixed windows; only 429 and Retry-After say so. Eight workers at a
  # ceiling of 50/s.
  start_api api.log --limit 5 --period 1 --window fixed --secret
  local started elapsed
  started=$(now_ms)
  seq 60 | xargs -P 8 -I{} "$RATELIMIT" run api -r 50/s --adaptive --observe --retries 5 -q -- \
    curl -s -o /dev/null "http://127.0.0.1:$API_PORT/item/{}" 2>errors
  local status=$?
  elapsed=$(($(now_ms) - started))
  stop_api
  expect_eq 0 "$status" "xargs" || return
  expect_eq 60 "$(grep -c ' 200 /item/' api.log)" "calls that succeeded"
  local throttled
  throttled=$(grep -c ' 429 /item/' api.log)
  # 2 to 7 here, most of them the first burst's; without --adaptive, 46.
  expect_true "at most 15 answers 429 in 60 calls, not $throttled" test "$throttled" -le 15
  # The secret limit allows 60 calls in 12 s.
  expect_true "60 calls in at most 30 s, not $elapsed ms" test "$elapsed" -le 30000
  local adaptive rate
  adaptive=$(adaptive_json api)
  expect_contains "$adaptive" '"ceiling_per_s":50'
  expect_contains "$adaptive" '"last_cut":"20'
  rate=$(printf '%s\n' "$adaptive" | sed -n 's/.*"rate_per_s":\([0-9]*\).*/\1/p')
  expect_true "a learned rate under 10/s: $adaptive" test "$rate" -lt 10
}

test_backoff_on_exit_status_cuts_the_rate_and_a_success_is_counted() {
  expect_status 75 rl run api -r 10/s --adaptive --backoff-on 75 --backoff 100ms -q -- \
    sh -c 'exit 75' || return
  local adaptive
  adaptive=$(adaptive_json api)
  expect_contains "$adaptive" '"ceiling_per_s":10'
  expect_contains "$adaptive" '"cut_from_per_s":10'
  # Cut to 7/s, and growing back since: below 10/s still, a moment later on a loaded machine.
  local rate
  rate=$(printf '%s\n' "$adaptive" | sed -n 's/.*"rate_per_s":\([0-9]*\).*/\1/p')
  expect_true "cut to 7/s and not yet back: $adaptive" test "$rate" -ge 7 -a "$rate" -lt 10
  expect_contains "$(rl status api)" "RATE"
  expect_contains "$(rl status api)" "LAST CUT"
  # The exit status counts with the answers 429 and 503.
  expect_contains "$(rl --json status api)" '"throttled":1'
  # Any other status than 0 and those of --backoff-on says nothing of the rate.
  expect_status 3 rl run other -r 10/s --adaptive --backoff-on 75 -q -- sh -c 'exit 3'
  expect_eq null "$(adaptive_json other | sed 's/.*"last_cut":\([a-z]*\).*/\1/')" "no cut"
}

test_try_spaces_grants_at_the_rate_and_without_adaptive_does_not() {
  # 5/5s: grants a second apart when adaptive, where two calls made one after the other fall
  # well inside a second on a loaded machine; up to five at once when not.
  expect_status 0 rl try api -r 5/5s --adaptive || return
  expect_status 1 rl try api -r 5/5s --adaptive
  expect_contains "$ERR" '"api" limited (adaptive rate 1/s, learned under sliding-log 5/5s); next slot in 0.'

  expect_status 0 rl try api -r 5/5s
  sleep 1.1
  expect_status 0 rl try api -r 5/5s --adaptive
  # A key that no --adaptive call used has none.
  expect_status 0 rl try plain -r 5/5s
  expect_eq null "$(adaptive_json plain)" "adaptive of a plain key"
  expect_true "no adaptive metric for it" sh -c "! '$RATELIMIT' metrics | grep -q 'adaptive_rate{key=\"plain\"}'"
  local metrics
  metrics=$(rl metrics)
  expect_true "the rate's metric" grep -qx 'ratelimit_adaptive_rate{key="api"} 1' <<<"$metrics"
  expect_true "the ceiling's metric" grep -qx 'ratelimit_adaptive_ceiling{key="api"} 1' <<<"$metrics"
}

test_a_named_limit_says_adaptive_and_reset_forgets_what_was_learned() {
  mkdir -p home/.config/ratelimit
  printf '[limits.api]\nrate = "5/5s"\nadaptive = true\n' >home/.config/ratelimit/limits.toml
  local env=(env HOME="$TEST_DIR/home" XDG_CONFIG_HOME="$TEST_DIR/home/.config")
  expect_status 75 "${env[@]}" "$RATELIMIT" run api --backoff-on 75 --backoff 100ms -q -- \
    sh -c 'exit 75' || return
  expect_contains "$(adaptive_json api)" '"cut_from_per_s":1}'
  # Spaced at the rate cut to, about 0.7/s: 1.43 s, where two calls one after the other fall
  # well inside that on a loaded machine.
  sleep 1.5
  expect_status 0 "${env[@]}" "$RATELIMIT" try api
  expect_status 1 "${env[@]}" "$RATELIMIT" try api
  expect_status 0 rl reset api
  expect_status 1 rl status api
  expect_status 0 "${env[@]}" "$RATELIMIT" try api
  expect_contains "$(adaptive_json api)" '"last_cut":null'
  printf '[limits.api]\nrate = "5/5s"\nadaptive = "yes"\n' >home/.config/ratelimit/limits.toml
  expect_status 2 "${env[@]}" "$RATELIMIT" try api
  expect_contains "$ERR" "adaptive must be true or false"
}

test_pipe_spaces_lines_at_the_adaptive_rate() {
  local started elapsed
  started=$(now_ms)
  printf 'a\nb\nc\nd\n' | rl pipe api -r 10/s --adaptive >out
  elapsed=$(($(now_ms) - started))
  expect_eq 4 "$(wc -l <out)" "lines through"
  # The limit alone lets the four through at once.
  expect_true "four lines spaced at 10/s: at least 300 ms, not $elapsed ms" test "$elapsed" -ge 290
}

test_run_refuses_adaptive_where_nothing_would_adapt() {
  expect_status 125 rl run api -r 10/s --until-exit --adaptive -- true
  expect_contains "$ERR" "give one of them"
  expect_status 125 rl run api -j 2 --adaptive -- true
  expect_contains "$ERR" "--adaptive needs a rate"
  expect_status 0 rl run api -j 2 -r 10/s --adaptive -- true
  expect_contains "$(adaptive_json api)" '"ceiling_per_s":10'
}

run_suite
