#!/bin/bash
# The hand-written alternative: a token bucket in bash with flock(1), builtins otherwise.
#   peer_flock_bucket.sh STATE_FILE COUNT PERIOD_SECONDS    exit 0 granted, 1 limited
state=$1 count=$2 period_us=$(($3 * 1000000))
exec 9>>"$state.lock"
flock 9
now=${EPOCHREALTIME/./}
capacity=$((count * period_us))
tokens=$capacity last=$now
[ -f "$state" ] && read -r tokens last <"$state"
elapsed=$((now - last))
((elapsed < 0)) && elapsed=0
tokens=$((tokens + elapsed * count))
((tokens > capacity)) && tokens=$capacity
if ((tokens >= period_us)); then
  echo "$((tokens - period_us)) $now" >"$state"
  exit 0
fi
echo "$tokens $now" >"$state"
exit 1
