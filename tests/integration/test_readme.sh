#!/usr/bin/env bash
# The README's recipes run as written, and do what the README says of them. Each block
# marked `<!-- recipe: NAME -->` is taken from README.md as it is, with only the addresses
# changed: the stand-in API (stand_in_api.py, on 127.0.0.1) for api.example.com, a
# redis-server of the test's own for redis.internal, and stubs for the programs in
# /usr/local/bin. `ratelimit` on PATH is the binary under test.
. "$(dirname "$0")/lib.sh"

SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)
README=$SOURCE_DIR/README.md
PYTHON=/usr/bin/python3

BIN_DIR=$WORK_ROOT/bin
mkdir -p "$BIN_DIR"
ln -sf "$RATELIMIT" "$BIN_DIR/ratelimit"
export PATH=$BIN_DIR:$PATH

# The names of the recipes, one a line.
recipe_names() {
  sed -n 's/^<!-- recipe: \(.*\) -->$/\1/p' "$README"
}

# The lines of the recipe NAME: the fenced block after its marker.
recipe() {
  awk -v marker="<!-- recipe: $1 -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$README"
}

# A crontab line's command: what follows its five time fields.
cron_command() {
  sed -E 's/^([^ ]+ +){5}//' <<<"$1"
}

# Stubs for /usr/local/bin/NAME, in ./stubs: each appends its name to ./runs and, while the
# file ./hold exists, keeps running. TEXT with /usr/local/bin/ pointing there.
with_stubs() {
  local name
  mkdir -p stubs
  for name in $(grep -oE '/usr/local/bin/[A-Za-z0-9_-]+' <<<"$1" | sort -u); do
    name=${name##*/}
    cat >"stubs/$name" <<SH
#!/bin/sh
echo $name >>"$PWD/runs"
touch "$PWD/started.\$\$"
while [ -e "$PWD/hold" ]; do sleep 0.05; done
SH
    chmod +x "stubs/$name"
  done
  sed "s|/usr/local/bin/|$PWD/stubs/|g" <<<"$1"
}

# The stand-in for an API that allows LIMIT requests in any second, by arrival (start_api in
# lib.sh); sets API_URL. Every request is logged in ./arrivals.
start_api_of() {
  start_api arrivals --limit "$1" --period 1
  API_URL=http://127.0.0.1:$API_PORT
}

answers() { grep -c " $1 " arrivals; }

# A curl on PATH whose first five calls take 0.3 s more before they connect, as a cold name
# cache or a TLS handshake would; the others call curl at once.
slow_first_curl() {
  mkdir -p slow-curl
  cat >slow-curl/curl <<SH
#!/bin/sh
for i in 1 2 3 4 5; do
  if mkdir "$PWD/slow-curl/\$i.\$ROUND" 2>/dev/null; then
    sleep 0.3
    break
  fi
done
exec $(command -v curl) "\$@"
SH
  chmod +x slow-curl/curl
}

has_function() { declare -F "$1" >/dev/null; }

test_every_recipe_is_run() {
  local names name
  names=$(recipe_names)
  expect_true "only $(wc -w <<<"$names") recipes found" test "$(wc -w <<<"$names")" -ge 5 || return
  for name in $names; do
    expect_true "recipe $name: no test_recipe_${name//-/_}" has_function "test_recipe_${name//-/_}"
    expect_true "recipe $name: no block" test -n "$(recipe "$name")"
  done
  # Every block of the Recipes section is a recipe: marked, and so run.
  local unmarked
  unmarked=$(awk '/^## / { on = $0 == "## Recipes" } on && /^```./ && previous !~ /^<!-- recipe: / { print NR } { previous = $0 }' "$README")
  expect_eq "" "$unmarked" "lines of README.md starting a block that is no recipe"
}

# An HTTP API that says where the quota stands: a rate of ours above the API's (10/5s
# against 8 per 4 s) is held by the budget its answers report, so that no call draws a 429
# but, at most, one that left before the answer that would have held it.
test_recipe_http_api_quota() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  local text
  text=$(recipe http-api-quota)
  expect_contains "$text" "--observe" "the recipe" || return
  start_api arrivals --limit 8 --period 4 --window fixed --fields github --retry-after auto
  text=${text//https:\/\/api.example.com/http://127.0.0.1:$API_PORT}
  seq 20 >ids.txt
  bash -c "$text" >out 2>err
  local status=$?
  stop_api
  expect_eq 0 "$status" "status of the recipe"
  expect_eq 20 "$(grep -c ' 200 /items/' arrivals)" "calls answered 200 through the recipe"
  expect_eq 20 "$(ls ./*.json | wc -l)" "files written"
  local throttled
  throttled=$(grep -c ' 429 /items/' arrivals)
  expect_true "at most 1 answer 429, not $throttled" test "$throttled" -le 1
}

# An HTTP API that keeps its limit secret: a ceiling ten times too high, and the rate the
# key learns from the 429s keeps them few (without --adaptive, 35 answers 429 for 40 calls).
test_recipe_http_api_secret() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  local text
  text=$(recipe http-api-secret)
  expect_contains "$text" "--adaptive" "the recipe" || return
  start_api arrivals --limit 5 --period 1 --window fixed --secret
  text=${text//https:\/\/api.example.com/http://127.0.0.1:$API_PORT}
  seq 40 >ids.txt
  bash -c "$text" >out 2>err
  local status=$?
  stop_api
  expect_eq 0 "$status" "status of the recipe"
  expect_eq 40 "$(grep -c ' 200 /items/' arrivals)" "calls answered 200 through the recipe"
  local throttled
  throttled=$(grep -c ' 429 /items/' arrivals)
  # The first burst finds the limit (2 to 7 here); without --adaptive, 35.
  expect_true "at most 12 answers 429 in 40 calls, not $throttled" test "$throttled" -le 12
}

# An HTTP API that allows 5 requests a second: with --until-exit, no 429 however the calls'
# connection times vary; without it, as the README says, some.
test_recipe_http_api() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  local text
  text=$(recipe http-api)
  expect_contains "$text" "--until-exit" "the recipe" || return
  slow_first_curl
  start_api_of 5
  text=${text//https:\/\/api.example.com/$API_URL}
  # The recipe as written, then 12 calls more at once.
  ROUND=1 PATH=$PWD/slow-curl:$PATH bash -c "$text"'
    for i in $(seq 12); do api item/$i & done; wait' >out 2>err
  expect_eq 0 "$?" "status of the recipe"
  expect_eq "" "$(cat err)" "stderr"
  expect_eq 13 "$(answers 200)" "calls answered 200 through the recipe"
  expect_eq 0 "$(answers 429)" "calls answered 429 through the recipe"
  # The same without --until-exit draws 429s: the recipe's option is what avoids them.
  sleep 1.1
  : >arrivals
  text=${text//--until-exit /}
  text=${text//run api /run api-without }
  ROUND=2 PATH=$PWD/slow-curl:$PATH bash -c "$text"'
    for i in $(seq 12); do api item/$i & done; wait' >out 2>err
  stop_api
  expect_true "no 429 without --until-exit: $(cat arrivals)" test "$(answers 429)" -gt 0
}

# Cron on one host: at most twice an hour, silently limited; never two backups at once, and
# a backup killed with kill -9 frees its slot at once.
test_recipe_cron() {
  local -a lines
  mapfile -t lines < <(recipe cron)
  expect_eq 2 "${#lines[@]}" "crontab lines" || return
  local sync backup
  sync=$(with_stubs "$(cron_command "${lines[0]}")")
  backup=$(with_stubs "$(cron_command "${lines[1]}")")
  expect_status 0 sh -c "$sync"
  expect_status 0 sh -c "$sync"
  expect_status 1 sh -c "$sync"
  expect_eq "" "$OUT$ERR" "output of a limited run, for cron to mail"
  expect_eq 2 "$(grep -c sync-reports runs)" "sync-reports runs"

  touch hold
  rm -f started.*
  bash -c "exec $backup" &
  local holder=$!
  wait_for_started 1
  # Bounded: a second backup that wrongly ran would wait for `hold` as the first does.
  expect_status 1 timeout 20 sh -c "$backup"
  expect_eq "" "$OUT$ERR" "output of a backup refused while one runs"
  kill -9 "$holder"
  wait "$holder" 2>/dev/null
  rm hold
  expect_status 0 sh -c "$backup"
  expect_eq 2 "$(grep -c backup runs)" "backup runs"
}

# Cron on several hosts through Redis: one host of three sends the report. A holder killed
# with kill -9 keeps its slot until its lease runs out, whose default the README gives.
test_recipe_cron_redis() {
  if ! command -v redis-server >/dev/null; then
    redis_required && fail "redis-server is required but not installed"
    skip "no redis-server"
    return 0
  fi
  local -a lines
  mapfile -t lines < <(recipe cron-redis)
  expect_eq 2 "${#lines[@]}" "crontab lines" || return
  local url=${lines[0]#RATELIMIT_STORE=}
  expect_contains "$url" "redis://:secret@redis.internal:6379/" "the variable's line" || return
  if ! launch_redis recipe redis_answers --port PORT --bind 127.0.0.1; then
    fail "redis-server did not start"
    return
  fi
  local redis_pid=$LAUNCHED_PID
  redis-cli -p "$LAUNCHED_PORT" config set requirepass secret >/dev/null
  export RATELIMIT_STORE=${url/redis.internal:6379/127.0.0.1:$LAUNCHED_PORT}
  local report
  report=$(with_stubs "$(cron_command "${lines[1]}")")
  local host statuses='' pids=()
  for host in 1 2 3; do
    (
      sh -c "$report" >"out.$host" 2>&1
      echo $? >"status.$host"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  statuses=$(cat status.* | sort | tr '\n' ' ')
  expect_eq "0 1 1 " "$statuses" "statuses of the three hosts"
  expect_eq "" "$(cat out.*)" "output of the hosts"
  expect_eq 1 "$(grep -c send-report runs)" "reports sent"

  # The lease: the same command on a key of its own, with a lease of 3 s for the test.
  expect_contains "$(cat "$README")" "(30 s by" "the README's lease" &&
    expect_contains "$(rl run --help | tr -s ' \n' '  ')" "(default 30s; renewed every third of it" \
      "run --help"
  local leased=${report/hourly-report/leased}
  leased=${leased/-j 1 /-j 1 --lease 3s }
  touch hold
  rm -f started.*
  bash -c "exec $leased" &
  local holder=$!
  wait_for_started 1
  kill -9 "$holder"
  wait "$holder" 2>/dev/null
  rm hold
  expect_status 1 rl run leased -j 1 --lease 3s --no-wait -q -- true
  sleep 3.5
  expect_status 0 rl run leased -j 1 --lease 3s --no-wait -q -- true
  unset RATELIMIT_STORE
  kill "$redis_pid"
  wait "$redis_pid" 2>/dev/null
}

# Parallel workers: every URL fetched, at most 4 at once, the eleventh a second after the
# first.
test_recipe_xargs() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  local text
  text=$(recipe xargs)
  start_api_of 1000
  local i
  for i in $(seq 12); do
    echo "$API_URL/file-$i"
  done >urls.txt
  # A curl that notes how many run at once, and takes 0.5 s: the first four overlap even on a
  # loaded machine.
  mkdir -p counting-curl
  cat >counting-curl/curl <<SH
#!/bin/sh
mkdir "$PWD/running.\$\$"
(set -- "$PWD"/running.*; echo \$#) >>"$PWD/at-once"
sleep 0.5
rmdir "$PWD/running.\$\$"
exec $(command -v curl) "\$@"
SH
  chmod +x counting-curl/curl
  PATH=$PWD/counting-curl:$PATH bash -c "$text" >out 2>err
  expect_eq 0 "$?" "status of the recipe"
  stop_api
  expect_eq "" "$(cat err)" "stderr"
  for i in $(seq 12); do
    expect_eq ok "$(cat "file-$i" 2>/dev/null)" "file-$i"
  done
  expect_eq 4 "$(sort -n at-once | tail -n 1)" "the most downloads at once"
  local first eleventh
  first=$(sort -n arrivals | sed -n '1s/ .*//p')
  eleventh=$(sort -n arrivals | sed -n '11s/ .*//p')
  expect_true "the 11th request $first..$eleventh, within a second of the 1st" \
    "$PYTHON" -c "import sys; sys.exit(not $eleventh - $first >= 0.9)"
}

# Backing off on 429: the calls that get a 429 pause the key and are retried; all succeed.
test_recipe_backoff() {
  command -v curl >/dev/null || { skip "no curl"; return 0; }
  local text
  text=$(recipe backoff)
  start_api_of 1
  text=${text//https:\/\/api.example.com/$API_URL}
  local i pids=()
  for i in 1 2 3; do
    (
      bash -c "$text" >"out.$i" 2>"err.$i"
      echo $? >"status.$i"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  stop_api
  expect_eq "0 0 0 " "$(cat status.* | tr '\n' ' ')" "statuses of the three calls"
  expect_eq 3 "$(answers 200)" "calls answered 200"
  expect_true "no call answered 429: $(cat arrivals)" test "$(answers 429)" -gt 0
  expect_contains "$(cat err.*)" 'exited with 22: "api" paused for' "stderr"
}

run_suite
