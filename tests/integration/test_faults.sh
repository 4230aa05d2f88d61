#!/usr/bin/env bash
# Faults: processes killed at random moments, a full disk, a read-only file system or file,
# a lock held by a stopped process, --on-store-error. Whatever happens, nothing is granted
# beyond the algorithm's bound, what is stored stays intact, and a failure is one line and
# exit status 3.
. "$(dirname "$0")/lib.sh"

is_root() { [ "$(id -u)" = 0 ]; }

integrity() { sqlite3 "$1" 'PRAGMA integrity_check'; }

PYTHON=/usr/bin/python3

# --- kill -9 at random moments --------------------------------------------------------

# The most grants ALGORITHM may make in ELAPSED_MS for a limit of COUNT per PERIOD_MS with
# BURST, starting from a fresh key.
grant_bound() {
  local algorithm=$1 count=$2 period_ms=$3 burst=$4 elapsed_ms=$5
  case $algorithm in
  # The bucket (or the queue and the grant leaving now), plus the rate over the run.
  token-bucket | leaky-bucket) echo $((burst + 2 + count * elapsed_ms / period_ms)) ;;
  # Every window the run touches holds at most COUNT.
  fixed-window | sliding-window) echo $((count * (elapsed_ms / period_ms + 2))) ;;
  # Any PERIOD-long interval holds at most COUNT.
  sliding-log) echo $((count * (elapsed_ms / period_ms + 1))) ;;
  esac
}

# The number of rt_sigtimedwait, where a waiter sleeps until its slot, in /proc/PID/syscall.
case $(uname -m) in
aarch64 | riscv64) SIGTIMEDWAIT=137 ;;
*) SIGTIMEDWAIT=128 ;; # x86_64
esac

# Milliseconds since the epoch, without a fork (the storm's loops must stay fast under load).
now_ms_into() {
  local t=${EPOCHREALTIME/./}
  printf -v "$1" %s $((t / 1000))
}

# Sets HOLDER_PID to the pid holding the flock on the file with inode $1, or empty, from
# /proc/locks (blocked waiters are listed with "->" and do not match).
flock_holder() {
  HOLDER_PID=
  local number kind advisory mode pid id rest
  while read -r number kind advisory mode pid id rest; do
    if [ "$kind" = FLOCK ] && [ "$mode" = WRITE ] && [ "${id##*:}" = "$1" ]; then
      HOLDER_PID=$pid
    fi
  done </proc/locks
}

# Eight workers run `try` and `wait` on one key while a killer SIGKILLs, in turn, the
# process holding the database lock (mid-transaction) and a random worker's process (often
# a `wait` asleep until its slot), for at least SECONDS and until it has killed at least two
# of each (at most 60 s, for a loaded machine). Afterwards: the database is intact, no lock
# is stuck, and the grants that completed are within the algorithm's bound.
kill_storm() {
  local algorithm=$1 count=$2 period_ms=$3 burst=$4 seconds=$5
  local args=(hot -a "$algorithm" -r "$count/${period_ms}ms" -q --lock-timeout 5s)
  if [ "$algorithm" = token-bucket ] || [ "$algorithm" = leaky-bucket ]; then
    args+=(-b "$burst")
  fi
  rl try other -r 1/s # creates the database, so that it has an inode to watch
  local inode start
  inode=$(stat -c %i "$DB")
  now_ms_into start
  local workers=()
  for p in 1 2 3 4 5 6 7 8; do
    (
      while [ ! -e stop ]; do
        if [ $((RANDOM % 2)) = 0 ]; then
          "$RATELIMIT" try "${args[@]}" &
          command=try
        else
          "$RATELIMIT" wait "${args[@]}" -t 0.5s &
          command=wait
        fi
        echo $! >"pid.$p"
        wait $!
        echo "$? $command" >>"statuses.$p"
      done
    ) 2>>errors & # the shell's "Killed" notices, and any error of ratelimit
    workers+=($!)
  done
  (
    round=0 lock_kills=0 sleep_kills=0
    min_end=$((start + seconds * 1000)) max_end=$((start + 60000))
    while :; do
      now_ms_into now
      if [ "$now" -ge "$max_end" ] ||
        { [ "$now" -ge "$min_end" ] && [ $lock_kills -ge 2 ] && [ $sleep_kills -ge 2 ]; }; then
        break
      fi
      round=$((round + 1))
      victim=
      if [ $((round % 2)) = 0 ]; then
        # The lock is held a small part of the time: look again and again for a holder.
        for _ in $(seq 1 300); do
          flock_holder "$inode"
          victim=$HOLDER_PID
          [ -n "$victim" ] && break
        done
      else
        # A waiter asleep until its slot (in rt_sigtimedwait) if there is one, else anyone.
        first=$((RANDOM % 8))
        for i in 0 1 2 3 4 5 6 7; do
          candidate= syscall=
          read -r candidate 2>/dev/null <"pid.$(((first + i) % 8 + 1))"
          [ -n "$candidate" ] && read -r syscall _ 2>/dev/null <"/proc/$candidate/syscall"
          [ -z "$victim" ] && victim=$candidate
          if [ "$syscall" = "$SIGTIMEDWAIT" ]; then
            victim=$candidate
            break
          fi
        done
      fi
      parent=
      # shellcheck disable=SC2034
      [ -n "$victim" ] && read -r _ _ _ parent _ 2>/dev/null <"/proc/$victim/stat"
      # Only processes this test started: children of the workers.
      if [ -n "$parent" ] && [[ " ${workers[*]} " == *" $parent "* ]] &&
        kill -STOP "$victim" 2>/dev/null; then
        kind=other
        syscall=
        read -r syscall _ 2>/dev/null <"/proc/$victim/syscall"
        flock_holder "$inode"
        if [ "$HOLDER_PID" = "$victim" ]; then
          kind=lock
          lock_kills=$((lock_kills + 1))
        elif [ "$syscall" = "$SIGTIMEDWAIT" ]; then
          kind=sleep # in rt_sigtimedwait: asleep until its slot
          sleep_kills=$((sleep_kills + 1))
        fi
        kill -KILL "$victim" 2>/dev/null && echo "$kind" >>kills
      fi
      sleep 0.0$((RANDOM % 4 + 1))
    done
    touch stop
  ) &
  local killer=$!
  wait $killer
  wait "${workers[@]}"
  local elapsed
  now_ms_into elapsed
  elapsed=$((elapsed - start))
  cat statuses.* >statuses
  touch kills
  local granted limited killed unexpected lock_kills sleep_kills
  granted=$(grep -c '^0 ' statuses)
  limited=$(grep -c '^1 ' statuses)
  killed=$(grep -c '^137 ' statuses)
  unexpected=$(grep -vc '^\(0\|1\|137\) ' statuses)
  lock_kills=$(grep -cx lock kills)
  sleep_kills=$(grep -cx sleep kills)
  local bound
  bound=$(grant_bound "$algorithm" "$count" "$period_ms" "$burst" "$elapsed")
  echo "    $algorithm: $(wc -l <statuses) calls, $granted granted (bound $bound)," \
    "$limited limited in $elapsed ms; $killed killed: $lock_kills holding the lock," \
    "$sleep_kills asleep until their slot"
  expect_eq 0 "$unexpected" "calls with another status than 0, 1 or 137 ($(grep -v '^\(0\|1\|137\) ' statuses | sort | uniq -c | tr '\n' ' ')) $(grep -v Killed errors | sort -u | head -n 5)"
  expect_true "granted $granted <= bound $bound" test "$granted" -le "$bound"
  expect_true "the limit was reached: $limited calls limited, $granted granted" \
    test "$limited" -ge 1 -a "$granted" -ge 1
  expect_true "$lock_kills processes killed holding the lock (want >= 2)" test "$lock_kills" -ge 2
  expect_true "$sleep_kills waiters killed in their sleep (want >= 2)" test "$sleep_kills" -ge 2
  expect_eq ok "$(integrity "$DB")" "integrity_check"
  # No lock is stuck: a new decision is made at once.
  local before after
  now_ms_into before
  expect_status 0 rl --lock-timeout 2s try fresh -r 1/s
  now_ms_into after
  expect_true "a fresh try took $((after - before)) ms" test $((after - before)) -lt 1500
  expect_status 0 rl --lock-timeout 2s wait fresh2 -r 1/s
  expect_eq ok "$(integrity "$DB")" "integrity_check after the fresh calls"
}

test_kill_9_storm_token_bucket() { kill_storm token-bucket 5 1000 2 4; }
test_kill_9_storm_leaky_bucket() { kill_storm leaky-bucket 5 1000 2 2; }
test_kill_9_storm_fixed_window() { kill_storm fixed-window 3 500 3 2; }
test_kill_9_storm_sliding_window() { kill_storm sliding-window 3 500 3 2; }
test_kill_9_storm_sliding_log() { kill_storm sliding-log 3 500 3 2; }

# The reservation of a waiter killed in its sleep: SIGKILL cannot be caught, so the slot
# stays taken (conservative: it never over-admits). SIGHUP, like SIGINT and SIGTERM (see
# test_core), gives it back.
waiter_killed_in_its_sleep() {
  local signal=$1 status=$2
  # A slot every 3 s, so that slow process starts cannot bring the waiter's slot.
  rl try s -r 1/3s -b 1
  "$RATELIMIT" wait s -r 1/3s -b 1 &
  local waiter=$!
  wait_for_reservation s 3000
  expect_status 1 rl --json try s -r 1/3s -b 1
  local before
  before=$(json_field "$OUT" retry_after_ms)
  kill -s "$signal" $waiter
  { wait $waiter; } 2>/dev/null
  expect_eq "$status" "$?" "status of the waiter killed by SIG$signal"
  expect_status 1 rl --json try s -r 1/3s -b 1
  after=$(json_field "$OUT" retry_after_ms)
  expect_true "before: next slot in $before ms, behind the waiter" test "$before" -gt 3000
}

test_sigkill_in_the_sleep_leaves_the_slot_taken() {
  local after
  waiter_killed_in_its_sleep KILL 137
  expect_true "after SIGKILL: next slot in $after ms, still behind the dead waiter" \
    test "$after" -gt 3000
}

test_sighup_in_the_sleep_gives_the_slot_back() {
  local after
  waiter_killed_in_its_sleep HUP 129
  expect_true "after SIGHUP: next slot in $after ms, the waiter's slot is free" \
    test "$after" -lt 3000
}

# --- a full disk ----------------------------------------------------------------------

# Mounts a tmpfs of SIZE on $TEST_DIR/$2; the test must call unmount_all.
mount_tmpfs() {
  mkdir -p "$TEST_DIR/$2"
  mount -t tmpfs -o "size=$1,mode=0755" ratelimit-test "$TEST_DIR/$2"
  MOUNTS+=("$TEST_DIR/$2")
}
unmount_all() {
  local m
  for m in "${MOUNTS[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  MOUNTS=()
}
MOUNTS=()

fill() { cat /dev/zero >"$1/filler" 2>/dev/null; }

keys_dump() { sqlite3 "$1" 'SELECT hex(name), algorithm, clock, hex(limits) FROM keys ORDER BY id'; }

test_disk_full_on_an_existing_database() {
  if ! is_root; then
    skip "needs root to mount a small tmpfs; CI runs as root"
    return
  fi
  mount_tmpfs 1m small
  local db=small/ratelimit.db
  rl --db "$db" try kept -r 1/min
  rl --db "$db" try kept2 -a sliding-log -r 5/min -c 2
  local before
  before=$(keys_dump "$db")
  fill small
  # Space the WAL already holds may take a few more grants; then a write must fail.
  local i status=0
  for i in $(seq 1 400); do
    expect_status_in "0 3" rl --db "$db" try "new-$i" -a sliding-log -r 9/min -c 3 || break
    [ "$STATUS" = 3 ] && break
  done
  expect_eq 3 "$STATUS" "status once the disk is full (after $i new keys)"
  expect_one_line
  expect_contains "$ERR" "the disk is full"
  # The existing state is intact: same rows, same decisions, integrity ok.
  rm small/filler
  expect_eq ok "$(integrity "$db")" "integrity_check"
  expect_eq "$before" "$(keys_dump "$db" | head -n 2)" "the keys stored before"
  expect_status 1 rl --db "$db" try kept -r 1/min
  expect_status 0 rl --db "$db" try kept2 -a sliding-log -r 5/min -c 2
  expect_status 1 rl --db "$db" try kept2 -a sliding-log -r 5/min -c 2
  unmount_all
}

test_disk_full_when_creating_the_database() {
  if ! is_root; then
    skip "needs root to mount a small tmpfs; CI runs as root"
    return
  fi
  mount_tmpfs 256k small
  fill small
  expect_status 3 rl --db small/ratelimit.db try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "the disk is full"
  expect_eq "filler" "$(ls small)" "files left on the full disk"
  unmount_all
}

test_disk_full_and_on_store_error_allow() {
  if ! is_root; then
    skip "needs root to mount a small tmpfs; CI runs as root"
    return
  fi
  mount_tmpfs 256k small
  fill small
  expect_status 0 rl --db small/ratelimit.db --on-store-error=allow try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: warning: "
  expect_contains "$ERR" "the disk is full"
  unmount_all
}

# expect_status_in "S1 S2" COMMAND...: like expect_status, for any of the statuses.
expect_status_in() {
  local allowed=$1
  shift
  OUT=$("$@" 2>"$TEST_DIR/stderr")
  STATUS=$?
  ERR=$(cat "$TEST_DIR/stderr")
  case " $allowed " in
  *" $STATUS "*) return 0 ;;
  esac
  fail "expected a status in ($allowed), got $STATUS from: $* (stderr: $ERR)"
  return 1
}

# --- read-only file systems and files --------------------------------------------------

test_read_only_file_system() {
  if ! is_root; then
    skip "needs root to mount a tmpfs read-only; CI runs as root"
    return
  fi
  mount_tmpfs 1m ro
  rl --db ro/ratelimit.db try k -r 1/min
  mount -o remount,ro "$TEST_DIR/ro"
  local sum
  sum=$(sha256sum ro/ratelimit.db)
  local expected
  for command in "try k -r 1/min" "wait k -r 1/min" "run k -r 1/min -- true" "try new -r 1/s"; do
    # run's own failures are 125, apart from the command's statuses.
    expected=3
    [ "${command%% *}" = run ] && expected=125
    # shellcheck disable=SC2086
    expect_status $expected rl --db ro/ratelimit.db $command || continue
    expect_one_line
    expect_contains "$ERR" "read-only"
  done
  expect_status 3 rl --db ro/other.db try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "read-only"
  expect_eq "$sum" "$(sha256sum ro/ratelimit.db)" "the database on the read-only file system"
  unmount_all
}

test_immutable_file() {
  rl try k -r 1/min
  if ! chattr +i "$DB" 2>/dev/null; then
    skip "chattr +i is not supported here (needs root and a file system that has it)"
    return
  fi
  expect_status 3 rl try k -r 1/min
  local err=$ERR
  chattr -i "$DB"
  ERR=$err
  expect_one_line
  expect_contains "$ERR" "cannot open database"
  expect_contains "$ERR" "not permitted"
}

# A file without write permission: root bypasses the permission, so the check runs as an
# unprivileged user when the tests run as root.
test_file_without_write_permission() {
  rl try k -r 1/min
  chmod 0444 "$DB"
  local as_user=()
  if is_root; then
    if ! command -v setpriv >/dev/null; then
      skip "setpriv is missing; cannot drop root's permission bypass"
      return
    fi
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    chmod 0755 "$WORK_ROOT" "$TEST_DIR"
  fi
  expect_status 3 "${as_user[@]}" "$RATELIMIT" --db "$DB" try k -r 1/min
  expect_one_line
  expect_contains "$ERR" "cannot open database"
  expect_contains "$ERR" "permission denied"
}

# --- foreign files, for every command that opens a store ------------------------------

# The arguments that make COMMAND open the store; empty for a command that has none.
store_invocation() {
  case $1 in
  try | wait) echo "$1 k -r 1/s" ;;
  run) echo "run k -r 1/s -- true" ;;
  pause) echo "pause k 1s" ;;
  observe) echo "observe k --status 429" ;;
  pipe) echo "pipe k -r 1/s" ;;
  status) echo "status k" ;;
  reset) echo "reset k" ;;
  gc) echo "gc" ;;
  metrics) echo "metrics" ;;
  esac
}

# Commands that never open a store.
without_store() { case $1 in help | simulate | completions | limits) return 0 ;; esac; return 1; }

# The commands `ratelimit --help` lists.
listed_commands() {
  "$RATELIMIT" --help | awk '/^[A-Za-z]+:/ { section = $1 } section == "Commands:" && /^  [a-z]/ { print $1 }'
}

expect_refused_by_every_command() {
  local file=$1 why=$2 sum command invocation
  sum=$(sha256sum "$file")
  local commands
  commands=$(listed_commands)
  expect_true "--help lists try, wait and run (got: $(echo $commands))" \
    test "$(echo "$commands" | grep -cx 'try\|wait\|run')" = 3
  echo "    $(basename "$file"): $(echo $commands)"
  for command in $commands; do
    invocation=$(store_invocation "$command")
    if [ -z "$invocation" ]; then
      without_store "$command" ||
        fail "command \"$command\" is new: add how it opens the store to store_invocation"
      continue
    fi
    # One line of input, for pipe. run's own failures are 125, apart from the command's.
    local expected=3
    [ "$command" = run ] && expected=125
    # shellcheck disable=SC2086
    expect_status $expected rl --db "$file" $invocation <<<"record" || continue
    expect_one_line
    expect_contains "$ERR" "$why" "stderr of $command"
    # Failing open writes nothing either.
    # shellcheck disable=SC2086
    rl --db "$file" --on-store-error=allow $invocation <<<"record" >/dev/null 2>&1
  done
  expect_eq "$sum" "$(sha256sum "$file")" "checksum of $file"
  expect_eq "$(basename "$file")" "$(ls "$(dirname "$file")" | grep -F "$(basename "$file")")" \
    "files beside $file (journals, scratch files)"
}

test_foreign_files_are_refused_by_every_command() {
  mkdir text other newer
  printf 'hello\n' >text/notes.txt
  expect_refused_by_every_command text/notes.txt "is not a ratelimit database"
  sqlite3 other/app.db "CREATE TABLE t (x); INSERT INTO t VALUES (42);"
  expect_refused_by_every_command other/app.db "another application's SQLite database"
  rl --db newer/ratelimit.db try k -r 1/s
  sqlite3 newer/ratelimit.db "PRAGMA user_version = 9; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  rm -f newer/ratelimit.db-wal newer/ratelimit.db-shm
  expect_refused_by_every_command newer/ratelimit.db "newer than this ratelimit reads"
}

# --- a lock held too long ---------------------------------------------------------------

# Starts a process that takes the database's flock and stops itself (SIGSTOP) holding it.
hold_flock_stopped() {
  "$PYTHON" -c 'import fcntl, os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
os.kill(os.getpid(), signal.SIGSTOP)' "$DB" &
  HOLDER=$!
  wait_until_stopped $HOLDER
}

# Starts a process that holds SQLite's write lock (BEGIN IMMEDIATE, not our flock) and stops.
hold_sqlite_lock_stopped() {
  "$PYTHON" -c 'import os, signal, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
os.kill(os.getpid(), signal.SIGSTOP)' "$DB" &
  HOLDER=$!
  wait_until_stopped $HOLDER
}

wait_until_stopped() {
  local i
  for i in $(seq 1 100); do
    [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
    sleep 0.05
  done
  fail "process $1 did not stop"
}

release_holder() {
  kill -KILL "$HOLDER" 2>/dev/null
  wait "$HOLDER" 2>/dev/null
}

# COMMAND... must exit 3 with one line naming --lock-timeout after about 1 s (the timeout
# given), and never hang: `timeout` kills it after 20 s.
expect_lock_timeout() {
  local start elapsed expected=3
  # run's own failures are 125, apart from the command's statuses.
  [ "$2" = run ] && expected=125
  start=$(now_ms)
  expect_status $expected timeout -s KILL 20 "$@"
  elapsed=$(($(now_ms) - start))
  expect_one_line
  expect_contains "$ERR" "locked by another process"
  expect_contains "$ERR" "--lock-timeout"
  expect_true "gave up after $elapsed ms, about the 1 s lock timeout" \
    test "$elapsed" -ge 900 -a "$elapsed" -lt 5000
}

test_a_stopped_process_holding_the_lock_times_out() {
  rl try k -r 1/s
  hold_flock_stopped
  expect_lock_timeout "$RATELIMIT" --lock-timeout 1s try k -r 1/s
  expect_contains "$ERR" "(1s)"
  expect_lock_timeout "$RATELIMIT" --lock-timeout 1s wait k -r 1/s
  expect_lock_timeout "$RATELIMIT" run k -r 1/s --lock-timeout 1s -- true
  release_holder
  expect_status 0 rl --lock-timeout 1s try k2 -r 1/s
}

test_a_stopped_process_holding_sqlites_lock_times_out() {
  rl try k -r 1/s
  hold_sqlite_lock_stopped
  expect_lock_timeout "$RATELIMIT" --lock-timeout 1s try k -r 1/s
  release_holder
  expect_status 0 rl --lock-timeout 1s try k2 -r 1/s
}

test_the_default_lock_timeout_is_10s() {
  rl try k -r 1/s
  hold_flock_stopped
  local start elapsed
  start=$(now_ms)
  expect_status 3 timeout -s KILL 30 "$RATELIMIT" try k -r 1/s
  elapsed=$(($(now_ms) - start))
  release_holder
  expect_contains "$ERR" "(10s)"
  expect_true "gave up after $elapsed ms, about 10 s" test "$elapsed" -ge 9900 -a "$elapsed" -lt 14000
}

# The wait on the lock uses SIGALRM: a parent that blocks it must not make the wait endless.
test_lock_timeout_with_sigalrm_blocked() {
  rl try k -r 1/s
  hold_flock_stopped
  expect_lock_timeout "$PYTHON" -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
os.execv(sys.argv[1], sys.argv[1:])' "$RATELIMIT" --lock-timeout 1s try k -r 1/s
  release_holder
}

# Timeouts so short that the timer may fire before the wait has begun: never a hang.
test_tiny_lock_timeouts_never_hang() {
  rl try k -r 1/s
  hold_flock_stopped
  local i hung=0 start
  start=$(now_ms)
  for i in $(seq 1 40); do
    timeout -s KILL 5 "$RATELIMIT" --lock-timeout 0.000001s try k -r 1/s 2>/dev/null
    [ $? = 137 ] && hung=$((hung + 1))
  done
  for i in $(seq 1 10); do
    timeout -s KILL 5 "$RATELIMIT" --lock-timeout 0 try k -r 1/s 2>/dev/null
    [ $? = 137 ] && hung=$((hung + 1))
  done
  release_holder
  expect_eq 0 "$hung" "calls that hung (killed after 5 s)"
}

# A signal ends a wait for the lock at once, as it would end flock(1): nothing is held yet.
test_sigterm_ends_a_wait_for_the_lock() {
  rl try k -r 1/s
  hold_flock_stopped
  local start
  start=$(now_ms)
  "$RATELIMIT" --lock-timeout 30s try k -r 1/s &
  local waiter=$!
  sleep 0.5
  kill -TERM $waiter
  { wait $waiter; } 2>/dev/null
  local status=$? elapsed=$(($(now_ms) - start))
  release_holder
  expect_eq 143 "$status" "status of the killed waiter"
  expect_true "ended after $elapsed ms, not at the 30 s lock timeout" test "$elapsed" -lt 5000
}

# --- --on-store-error -----------------------------------------------------------------

test_on_store_error_deny_is_the_default() {
  printf 'not a database\n' >foreign
  expect_status 3 rl --db foreign try k -r 1/s
  expect_status 3 rl --db foreign --on-store-error=deny try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "is not a ratelimit database"
}

test_on_store_error_allow_grants_with_a_warning() {
  printf 'not a database\n' >foreign
  expect_status 0 rl --db foreign --on-store-error=allow try k -r 1/s
  expect_eq "" "$OUT" "stdout"
  expect_one_line
  expect_contains "$ERR" "ratelimit: warning: \"foreign\" is not a ratelimit database"
  expect_contains "$ERR" "--on-store-error=allow"
  # After the command name too, and for every decision command; wait does not sleep.
  local start
  start=$(now_ms)
  expect_status 0 rl wait k -r 1/h --db foreign --on-store-error allow
  expect_one_line
  expect_true "wait returned at once" test $(($(now_ms) - start)) -lt 1000
  expect_status 7 rl --db foreign --on-store-error=allow run k -r 1/s -- sh -c 'echo ran; exit 7'
  expect_eq ran "$OUT" "the command ran"
  expect_one_line
  expect_status 0 rl --db foreign --on-store-error=allow --json try k -r 1/s
  expect_eq true "$(json_field "$OUT" allowed)" "allowed"
  expect_contains "$OUT" '"store_error":"\"foreign\" is not a ratelimit database'

  expect_status 0 rl --db foreign --on-store-error=allow -q try k -r 1/s
  expect_one_line # the warning shows even with -q: -q only silences denials
}

# pipe KEY fails open to a limiter of its own: every record passes, at the limit's pace.
test_on_store_error_allow_in_pipe() {
  printf 'not a database\n' >foreign
  local start elapsed
  start=$(now_ms)
  expect_status 0 rl --db foreign --on-store-error=allow pipe k -r 2/s -b 1 <<<$'a\nb\nc'
  elapsed=$(($(now_ms) - start))
  expect_eq $'a\nb\nc' "$OUT" "records"
  expect_one_line
  expect_contains "$ERR" "ratelimit: warning: \"foreign\" is not a ratelimit database"
  expect_true "three records at 2/s took $elapsed ms, at least 900" test "$elapsed" -ge 900
  expect_status 3 rl --db foreign pipe k -r 2/s <<<$'a\nb'
  expect_eq "" "$OUT" "records written when the store fails under deny"
  expect_one_line
}

# A store that fails in the middle of a pipe: the rest goes on at the limit's pace.
test_on_store_error_allow_when_the_store_fails_mid_pipe() {
  rl try k -r 1/s
  {
    echo first
    sleep 0.5
    "$PYTHON" -c 'import fcntl, os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
os.kill(os.getpid(), signal.SIGSTOP)' "$DB" </dev/null >/dev/null &
    echo $! >holder
    sleep 0.5
    echo second
    echo third
  } | "$RATELIMIT" --lock-timeout 0.3s --on-store-error=allow pipe k2 -r 20/s >out 2>err
  local status=$?
  kill -KILL "$(cat holder)"
  expect_eq 0 "$status" "status of the pipe"
  expect_eq $'first\nsecond\nthird' "$(cat out)" "records"
  ERR=$(cat err)
  expect_one_line
  expect_contains "$ERR" "warning: database"
  expect_contains "$ERR" "--lock-timeout"
}

# Every store: Redis too (nothing listens on port 1, so the connection is refused).
test_on_store_error_allow_with_redis_down() {
  expect_status 3 rl --store redis://127.0.0.1:1 try k -r 1/s
  expect_status 0 rl --store redis://127.0.0.1:1 --on-store-error=allow try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: warning: redis 127.0.0.1:1: cannot connect"
  expect_status 0 rl --store redis://127.0.0.1:1 --on-store-error=allow pipe k -r 100/s <<<"record"
  expect_eq record "$OUT" "the record"
  expect_one_line
}

test_on_store_error_does_not_apply_to_status_reset_gc() {
  printf 'not a database\n' >foreign
  local command
  for command in "status" "status k" "reset k" "reset --all" "gc"; do
    # shellcheck disable=SC2086
    expect_status 3 rl --db foreign --on-store-error=allow $command || continue
    expect_one_line
    expect_contains "$ERR" "is not a ratelimit database"
  done
}

test_on_store_error_allow_on_a_lock_timeout() {
  rl try k -r 1/s
  hold_flock_stopped
  expect_status 0 timeout -s KILL 20 "$RATELIMIT" --lock-timeout 0.5s --on-store-error=allow \
    try k -r 1/s
  release_holder
  expect_one_line
  expect_contains "$ERR" "warning: database"
  expect_contains "$ERR" "--lock-timeout"
}

test_on_store_error_allow_still_limits_when_the_store_works() {
  expect_status 0 rl --on-store-error=allow try k -r 1/min
  expect_status 1 rl --on-store-error=allow try k -r 1/min
  expect_status 2 rl --on-store-error=allow try k -r 1/min -a fixed-window
  expect_contains "$ERR" "sliding-log" # a usage error is not a store error
}

run_suite
