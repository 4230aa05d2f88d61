#!/usr/bin/env bash
# Redis as a fleet has it: over TLS (rediss://, a CA made here, a client certificate when the
# server demands one, sessions resumed across processes), on a Unix socket, with the password
# outside argv (RATELIMIT_STORE_PASSWORD), the TLS files from the configuration's [store].
# Runs its own redis-servers on loopback, and a TLS terminator that tells resumed handshakes
# from full ones (tls_terminator.py), and stops them by PID.
. "$(dirname "$0")/lib.sh"

if ! command -v redis-server >/dev/null || ! command -v openssl >/dev/null; then
  if redis_required; then
    echo "$SUITE_NAME: redis-server and openssl are required but not installed" >&2
    exit 1
  fi
  echo "$SUITE_NAME: skipped: redis-server or openssl is not installed"
  exit 77
fi

CERTS=$WORK_ROOT/certs
SOCKET=$WORK_ROOT/redis.sock
PLAIN_PORT=
TLS_PORT=
MTLS_PORT=
TERMINATOR_PID=
TERMINATOR_PORT=
# The TLS sessions of the suite's processes: not in the home directory of whoever runs it.
export XDG_STATE_HOME=$WORK_ROOT/state
stop_all() {
  stop_servers
  if [ -n "$TERMINATOR_PID" ]; then
    kill "$TERMINATOR_PID" 2>/dev/null
    wait "$TERMINATOR_PID" 2>/dev/null
  fi
}
trap stop_all EXIT

# A CA, a server certificate for localhost and 127.0.0.1, one for localhost only and a client
# certificate signed by it, and another CA that signed nothing of ours. EC keys: made in milliseconds.
make_certificates() {
  mkdir -p "$CERTS" && cd "$CERTS" || exit 1
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  {
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 2 -subj /CN=ratelimit-test-ca &&
      openssl req -x509 "${ec[@]}" -keyout other-ca.key -out other-ca.crt -days 2 \
        -subj /CN=another-ca &&
      openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=localhost &&
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext &&
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out server.crt &&
      printf 'subjectAltName=DNS:localhost\n' >named.ext &&
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile named.ext -out named.crt &&
      openssl req "${ec[@]}" -keyout client.key -out client.csr -subj /CN=ratelimit-client &&
      openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -out client.crt
  } >openssl.log 2>&1 || {
    echo "$SUITE_NAME: openssl could not make the test certificates:" >&2
    cat openssl.log >&2
    exit 1
  }
  cd "$WORK_ROOT" || exit 1
}

make_certificates
# A plain server on a port and a Unix socket, with a password.
start_server plain redis_log_says_ready --port PORT --bind 127.0.0.1 --unixsocket "$SOCKET" \
  --unixsocketperm 700 \
  --requirepass 's3cret pass'
PLAIN_PORT=$PORT
tls_arguments=(--port 0 --bind 127.0.0.1 --tls-cert-file "$CERTS/server.crt"
  --tls-key-file "$CERTS/server.key" --tls-ca-cert-file "$CERTS/ca.crt")
start_server tls redis_log_says_ready --tls-port PORT "${tls_arguments[@]}" --tls-auth-clients no
TLS_PORT=$PORT
# This one's certificate names localhost only.
start_server mtls redis_log_says_ready --tls-port PORT \
  "${tls_arguments[@]/server.crt/named.crt}" \
  --tls-auth-clients yes
MTLS_PORT=$PORT
# TLS in front of the plain server, logging each handshake: resumed, full or failed.
/usr/bin/python3 "$SUITE_DIR/tls_terminator.py" --cert "$CERTS/server.crt" \
  --key "$CERTS/server.key" --backend-port "$PLAIN_PORT" --port-file "$WORK_ROOT/terminator.port" \
  --log "$WORK_ROOT/handshakes.log" &
TERMINATOR_PID=$!
wait_for_file "$WORK_ROOT/terminator.port"
TERMINATOR_PORT=$(cat "$WORK_ROOT/terminator.port" 2>/dev/null)
if [ -z "$TERMINATOR_PORT" ]; then
  echo "$SUITE_NAME: the TLS terminator did not start" >&2
  exit 1
fi
echo "  terminator: pid $TERMINATOR_PID, port $TERMINATOR_PORT"
unset RATELIMIT_STORE RATELIMIT_STORE_PASSWORD RATELIMIT_STORE_CA RATELIMIT_STORE_CERT \
  RATELIMIT_STORE_KEY RATELIMIT_TLS_SESSION_CACHE
# The tests of the TLS relay turn it on: the others count handshakes, and its processes would
# make more, ahead of the decisions.
export RATELIMIT_TLS_RELAY=off

# The handshakes the terminator logged after the first $1, on one line: "full resumed".
handshakes_since() {
  tail -n +"$(($1 + 1))" "$WORK_ROOT/handshakes.log" | paste -sd ' '
}
handshakes_so_far() {
  wc -l <"$WORK_ROOT/handshakes.log"
}
# await_lines FILE COUNT: waits (up to 5 s) until FILE has COUNT lines: the terminator logs a
# failed handshake when it sees the client's alert, which may be after the client has exited.
await_lines() {
  local tries=0
  while [ "$(wc -l <"$1")" -lt "$2" ] && [ $tries -lt 100 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
}

# Decides once through the terminator (the plain server's password, the CA that signed it
# unless $CA names another, or is empty for the system's), the sessions kept under
# $TEST_DIR/state; more options before the command in "$@".
decide_via_terminator() {
  XDG_STATE_HOME=$TEST_DIR/state RATELIMIT_STORE_PASSWORD='s3cret pass' \
    RATELIMIT_STORE_CA=${CA-$CERTS/ca.crt} \
    rl --store "rediss://${HOST:-127.0.0.1}:$TERMINATOR_PORT" "$@" try "resume-$TEST_DIR" -r 1000/s
}

# The only session file under $TEST_DIR/state, in $SESSION_FILE; a failure when there are
# none or several.
find_session_file() {
  local files=("$TEST_DIR"/state/ratelimit/tls-sessions/*.tls)
  SESSION_FILE=
  if [ ${#files[@]} -ne 1 ] || [ ! -e "${files[0]}" ]; then
    fail "expected one session file, found: ${files[*]}"
    return 1
  fi
  SESSION_FILE=${files[0]}
}

test_tls_with_the_ca_given_verifies_and_decides() {
  local store=rediss://127.0.0.1:$TLS_PORT/0 key=tls-$RANDOM
  expect_status 0 rl --store "$store" --store-ca "$CERTS/ca.crt" try "$key" -r 2/min
  expect_status 0 rl --store "$store" --store-ca "$CERTS/ca.crt" try "$key" -r 2/min
  expect_status 1 rl --store "$store" --store-ca "$CERTS/ca.crt" try "$key" -r 2/min
  # The host name is checked too: the certificate names localhost.
  RATELIMIT_STORE_CA=$CERTS/ca.crt expect_status 1 rl --store "rediss://localhost:$TLS_PORT" \
    try "$key" -r 2/min
  RATELIMIT_STORE_CA=$CERTS/ca.crt expect_status 0 rl --store "$store" --json status "$key"
  expect_contains "$OUT" "\"key\":\"$key\""
}

# The first process makes a full handshake and keeps the session, private, in the state
# directory; the next ones resume it, each keeping the ticket the server gave it.
test_a_second_process_resumes_the_tls_session() {
  local before
  before=$(handshakes_so_far)
  expect_status 0 decide_via_terminator
  find_session_file || return
  expect_contains "$(basename "$SESSION_FILE")" "127.0.0.1-$TERMINATOR_PORT-"
  expect_eq 600 "$(stat -c %a "$SESSION_FILE")" "the session file's mode"
  expect_eq 700 "$(stat -c %a state/ratelimit/tls-sessions)" "its directory's mode"
  expect_eq 700 "$(stat -c %a state/ratelimit)" "the state directory's mode"
  expect_eq "ratelimit TLS session 1" "$(head -n 1 "$SESSION_FILE")" "the file's header"
  expect_status 0 decide_via_terminator
  expect_status 0 decide_via_terminator
  expect_eq "full resumed resumed" "$(handshakes_since "$before")" "the handshakes"
  # Nothing but the one file: the temporary ones were renamed.
  expect_eq 1 "$(find state -type f | wc -l)" "files under state/"
  # Against redis-server itself too (whose resumption is not observed: it still decides).
  local store=rediss://127.0.0.1:$TLS_PORT
  XDG_STATE_HOME=$TEST_DIR/state expect_status 0 rl --store "$store" --store-ca "$CERTS/ca.crt" \
    try "redis-$TEST_DIR" -r 2/min
  XDG_STATE_HOME=$TEST_DIR/state expect_status 0 rl --store "$store" --store-ca "$CERTS/ca.crt" \
    try "redis-$TEST_DIR" -r 2/min
  XDG_STATE_HOME=$TEST_DIR/state expect_status 1 rl --store "$store" --store-ca "$CERTS/ca.crt" \
    try "redis-$TEST_DIR" -r 2/min
  expect_eq 1 "$(find state -name "127.0.0.1-$TLS_PORT-*.tls" | wc -l)" "redis-server's session file"
}

# A file that cannot be used is passed over without a word: a full handshake, a decision
# made, and a good file in its place.
test_a_tls_session_file_that_cannot_be_used_is_passed_over() {
  local before
  expect_status 0 decide_via_terminator
  find_session_file || return
  cp "$SESSION_FILE" good.tls
  before=$(handshakes_so_far)
  # Corrupt, cut short, open to others.
  printf 'ratelimit TLS session 1\nnot this one\n\x30\x82garbage' >"$SESSION_FILE"
  expect_status 0 decide_via_terminator
  expect_eq "" "$ERR" "stderr"
  expect_eq "ratelimit TLS session 1" "$(head -n 1 "$SESSION_FILE")" "the file written again"
  head -c 120 good.tls >"$SESSION_FILE"
  expect_status 0 decide_via_terminator
  expect_eq "" "$ERR" "stderr"
  cp good.tls "$SESSION_FILE" && chmod 640 "$SESSION_FILE"
  expect_status 0 decide_via_terminator
  expect_eq 600 "$(stat -c %a "$SESSION_FILE")" "the mode of the file written in its place"
  expect_eq "full full full" "$(handshakes_since "$before")" "the handshakes"
  # A symlink to a good file is not followed, and the file it points to is left alone.
  cp good.tls target.tls
  chmod 600 target.tls
  ln -sf "$TEST_DIR/target.tls" "$SESSION_FILE"
  before=$(handshakes_so_far)
  expect_status 0 decide_via_terminator
  expect_true "the symlink's target untouched" cmp -s good.tls target.tls
  expect_true "the symlink replaced by a file" test -f "$SESSION_FILE" -a ! -L "$SESSION_FILE"
  # A file of another user's (when we may give it one).
  if [ "$(id -u)" = 0 ]; then
    chown 65534 "$SESSION_FILE"
    expect_status 0 decide_via_terminator
    expect_eq 0 "$(stat -c %u "$SESSION_FILE")" "the owner of the file written in its place"
  fi
  # Expired: three hours on, past the lifetime of the session (two hours).
  XDG_STATE_HOME=$TEST_DIR/state RATELIMIT_STORE_PASSWORD='s3cret pass' \
    RATELIMIT_STORE_CA=$CERTS/ca.crt expect_status 0 rl_at +3h \
    --store "rediss://127.0.0.1:$TERMINATOR_PORT" try "resume-$TEST_DIR" -r 1000/s
  if [ "$(id -u)" = 0 ]; then
    expect_eq "full full full" "$(handshakes_since "$before")" "the handshakes"
  else
    expect_eq "full full" "$(handshakes_since "$before")" "the handshakes"
  fi
}

# A session is bound to the server's name and port, the CA file and the client's files: a
# CA file that now holds another CA is not trusted through a session made with the old one.
test_a_tls_session_is_offered_to_its_own_identity_only() {
  local before
  cp "$CERTS/ca.crt" my-ca.pem
  CA=$TEST_DIR/my-ca.pem expect_status 0 decide_via_terminator
  before=$(handshakes_so_far)
  CA=$TEST_DIR/my-ca.pem expect_status 0 decide_via_terminator
  # Another CA in the same file: a full handshake, whose certificate does not verify.
  cp "$CERTS/other-ca.crt" my-ca.pem
  CA=$TEST_DIR/my-ca.pem expect_status 3 decide_via_terminator
  expect_one_line
  expect_contains "$ERR" "the server's certificate does not verify: "
  await_lines "$WORK_ROOT/handshakes.log" $((before + 2))
  # Another CA file, another name, a client certificate: full handshakes.
  CA=$CERTS/other-ca.crt expect_status 3 decide_via_terminator
  expect_contains "$ERR" "does not verify"
  await_lines "$WORK_ROOT/handshakes.log" $((before + 3))
  HOST=localhost expect_status 0 decide_via_terminator
  expect_status 0 decide_via_terminator --store-cert "$CERTS/client.crt" \
    --store-key "$CERTS/client.key"
  expect_eq "resumed failed failed full full" "$(handshakes_since "$before")" "the handshakes"
  expect_eq 3 "$(find state -name '*.tls' | wc -l)" "session files: one an identity"
  # Each of them resumes its own.
  before=$(handshakes_so_far)
  cp "$CERTS/ca.crt" my-ca.pem
  HOST=localhost expect_status 0 decide_via_terminator
  expect_status 0 decide_via_terminator --store-cert "$CERTS/client.crt" \
    --store-key "$CERTS/client.key"
  expect_eq "resumed resumed" "$(handshakes_since "$before")" "the handshakes"
}

# Without --store-ca, the system's CAs (OpenSSL's $SSL_CERT_FILE here) are the identity's:
# once they no longer hold the server's CA, the session is not offered.
test_a_session_verified_by_the_system_cas_is_offered_while_they_hold_its_ca() {
  local before
  cat "$CERTS/ca.crt" "$CERTS/other-ca.crt" >system-cas.pem
  before=$(handshakes_so_far)
  SSL_CERT_FILE=$TEST_DIR/system-cas.pem CA= expect_status 0 decide_via_terminator
  SSL_CERT_FILE=$TEST_DIR/system-cas.pem CA= expect_status 0 decide_via_terminator
  cp "$CERTS/other-ca.crt" system-cas.pem
  SSL_CERT_FILE=$TEST_DIR/system-cas.pem CA= expect_status 3 decide_via_terminator
  expect_contains "$ERR" "does not verify: "
  expect_contains "$ERR" "(checked against the system's CAs; --store-ca names another CA)"
  await_lines "$WORK_ROOT/handshakes.log" $((before + 3))
  expect_eq "full resumed failed" "$(handshakes_since "$before")" "the handshakes"
}

# start_terminator NAME CERT [PORT]: another terminator, its port in $PORT, its log NAME.log.
start_terminator() {
  /usr/bin/python3 "$SUITE_DIR/tls_terminator.py" --cert "$2" --key "$CERTS/server.key" \
    --backend-port "$PLAIN_PORT" --port "${3:-0}" --port-file "$1.port" --log "$1.log" &
  echo $! >"$1.pid"
  wait_for_file "$1.port"
  PORT=$(cat "$1.port" 2>/dev/null)
  [ -n "$PORT" ] || fail "the terminator $1 did not start"
}
stop_terminator() {
  kill "$(cat "$1.pid")" 2>/dev/null
  wait "$(cat "$1.pid")" 2>/dev/null
}

# A server that no longer knows the session offered makes a full handshake: then the server's
# certificate is verified, though the CAs were not loaded for a resumed one.
test_a_session_the_server_refuses_leaves_a_verified_full_handshake() {
  local port
  start_terminator first "$CERTS/server.crt"
  port=$PORT
  [ -n "$port" ] || return
  # This test's own terminators (each test runs in a subshell).
  TERMINATOR_PORT=$port
  expect_status 0 decide_via_terminator
  stop_terminator first
  # On the same port, with new session keys: one whose certificate names localhost only.
  start_terminator second "$CERTS/named.crt" "$port"
  expect_status 3 decide_via_terminator
  expect_contains "$ERR" "the server's certificate does not verify: IP address mismatch"
  await_lines second.log 1
  expect_eq "failed" "$(paste -sd ' ' second.log)" "the handshakes"
  stop_terminator second
  # And one whose certificate verifies.
  start_terminator third "$CERTS/server.crt" "$port"
  expect_status 0 decide_via_terminator
  expect_status 0 decide_via_terminator
  expect_eq "full resumed" "$(paste -sd ' ' third.log)" "the handshakes"
  stop_terminator third
}

# A chain signed with RSA-PSS: its verification looks the digest the signature's parameters
# name up by its legacy name (which OpenSSL's initialisation here leaves out but for such
# digests).
test_a_chain_signed_with_rsa_pss_verifies() {
  {
    openssl req -x509 -newkey rsa-pss -pkeyopt rsa_keygen_bits:2048 -nodes -keyout pss-ca.key \
      -out pss-ca.crt -days 2 -subj /CN=pss-ca &&
      openssl x509 -req -in "$CERTS/server.csr" -CA pss-ca.crt -CAkey pss-ca.key \
        -CAcreateserial -days 2 -extfile "$CERTS/server.ext" -sigopt rsa_padding_mode:pss \
        -sha384 -out pss-server.crt
  } >openssl.log 2>&1 || {
    fail "openssl could not make the certificates: $(cat openssl.log)"
    return
  }
  start_terminator pss pss-server.crt
  [ -n "$PORT" ] || return
  TERMINATOR_PORT=$PORT
  CA=$PWD/pss-ca.crt expect_status 0 decide_via_terminator
  CA=$PWD/pss-ca.crt expect_status 0 decide_via_terminator
  expect_eq "full resumed" "$(paste -sd ' ' pss.log)" "the handshakes"
  stop_terminator pss
}

test_tls_sessions_are_not_kept_with_the_cache_off() {
  local before
  before=$(handshakes_so_far)
  RATELIMIT_TLS_SESSION_CACHE=off expect_status 0 decide_via_terminator
  RATELIMIT_TLS_SESSION_CACHE=off expect_status 0 decide_via_terminator
  expect_eq "full full" "$(handshakes_since "$before")" "the handshakes"
  expect_true "no state directory" test ! -e state
  RATELIMIT_TLS_SESSION_CACHE=no expect_status 2 decide_via_terminator
  expect_one_line
  expect_contains "$ERR" "ratelimit: invalid RATELIMIT_TLS_SESSION_CACHE \"no\": expected on or off"
}

test_tls_without_the_ca_exits_3_saying_why() {
  expect_status 3 rl --store "rediss://127.0.0.1:$TLS_PORT" try k -r 1/s
  expect_one_line
  # OpenSSL's reason, and what the certificate was checked against.
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:$TLS_PORT: the server's certificate does not verify: "
  expect_contains "$ERR" " (checked against the system's CAs; --store-ca names another CA)"
  expect_status 3 rl --store "rediss://127.0.0.1:$TLS_PORT" --store-ca "$CERTS/other-ca.crt" \
    try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "does not verify: "
  expect_contains "$ERR" " (checked against $CERTS/other-ca.crt (--store-ca))"
  expect_status 3 rl --store "rediss://127.0.0.1:$TLS_PORT" --store-ca "$CERTS/missing.crt" \
    try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "cannot read the CA file \"$CERTS/missing.crt\" (--store-ca)"
}

test_tls_client_certificate_demanded_and_given() {
  local store=rediss://localhost:$MTLS_PORT
  export RATELIMIT_STORE_CA=$CERTS/ca.crt
  expect_status 3 rl --store "$store" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis localhost:$MTLS_PORT: "
  # The server's alert when it reaches us ("certificate required"), else its closing.
  expect_contains "$ERR" "client certificate"
  expect_contains "$ERR" "--store-cert"
  expect_status 0 rl --store "$store" --store-cert "$CERTS/client.crt" \
    --store-key "$CERTS/client.key" try k -r 1/min
  RATELIMIT_STORE_CERT=$CERTS/client.crt RATELIMIT_STORE_KEY=$CERTS/client.key \
    expect_status 1 rl --store "$store" try k -r 1/min
  # The key in the certificate's file.
  cat "$CERTS/client.crt" "$CERTS/client.key" >both.pem
  expect_status 1 rl --store "$store" --store-cert both.pem try k -r 1/min
  expect_status 2 rl --store "$store" --store-key "$CERTS/client.key" try k -r 1/min
  expect_contains "$ERR" "no --store-cert"
}

# run -j waits for a slot with a blocking BLPOP whose reply it awaits with poll(2): over TLS
# too the second command starts as soon as the first ends, not at a timeout.
test_run_waits_for_a_slot_over_tls() {
  export RATELIMIT_STORE=rediss://127.0.0.1:$TLS_PORT RATELIMIT_STORE_CA=$CERTS/ca.crt
  local started ended
  rl run slot -j 1 -- sleep 1 &
  sleep 0.4
  started=$(now_ms)
  expect_status 0 rl run slot -j 1 -- touch ran
  ended=$(now_ms)
  wait
  expect_true "ran" test -e ran
  expect_true "waited for the first to end, about 0.6 s: $((ended - started)) ms" \
    test $((ended - started)) -ge 300 -a $((ended - started)) -lt 2500
}

# [store] of the configuration file names the store and its TLS files, relative ones from the
# file's directory; the options and the variables win over the file.
test_tls_files_from_the_configuration_file() {
  unset RATELIMIT_DB
  local key=conf-$RANDOM
  mkdir -p conf elsewhere
  cp "$CERTS/ca.crt" conf/ca.pem
  cat >conf/limits.toml <<TOML
[store]
url = "rediss://127.0.0.1:$TLS_PORT/0"
ca = "ca.pem"
TOML
  cd elsewhere || return
  expect_status 0 rl --config ../conf/limits.toml try "$key" -r 1/min
  expect_status 1 rl --config ../conf/limits.toml try "$key" -r 1/min
  RATELIMIT_CONFIG=$TEST_DIR/conf/limits.toml expect_status 1 rl try "$key" -r 1/min
  cd .. || return
  # The wrong CA in the file: the message says where it was given; the option and the
  # variable win over the file.
  sed -i 's|^ca = .*|ca = "'"$CERTS"'/other-ca.crt"|' conf/limits.toml
  expect_status 3 rl --config conf/limits.toml try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "does not verify: "
  expect_contains "$ERR" "(checked against $CERTS/other-ca.crt ([store] ca at conf/limits.toml:3))"
  expect_status 1 rl --config conf/limits.toml --store-ca "$CERTS/ca.crt" try "$key" -r 1/min
  RATELIMIT_STORE_CA=$CERTS/ca.crt expect_status 1 rl --config conf/limits.toml try "$key" -r 1/min
  # A store named outside the file takes no TLS file from it.
  expect_status 3 rl --config conf/limits.toml --store "rediss://127.0.0.1:$TLS_PORT/0" \
    try "$key" -r 1/min
  expect_contains "$ERR" "checked against the system's CAs"
  # A file that is not there: a store failure, as for the option, saying where it was named.
  sed -i 's|^ca = .*|ca = "missing.pem"|' conf/limits.toml
  expect_status 3 rl --config conf/limits.toml try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "cannot read the CA file \"conf/missing.pem\" ([store] ca at conf/limits.toml:3)"
  # A bad value: a usage error at its line.
  sed -i 's|^ca = .*|ca = ""|' conf/limits.toml
  expect_status 2 rl --config conf/limits.toml try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "ratelimit: conf/limits.toml:3: ca takes the path of a PEM file"
}

test_client_certificate_from_the_configuration_file() {
  unset RATELIMIT_DB
  local key=conf-cert-$RANDOM
  cat >limits.toml <<TOML
[store]
url = "rediss://localhost:$MTLS_PORT"
ca = "$CERTS/ca.crt"
cert = "$CERTS/client.crt"
key = "$CERTS/client.key"
TOML
  expect_status 0 rl --config "$TEST_DIR/limits.toml" try "$key" -r 1/min
  expect_status 1 rl --config "$TEST_DIR/limits.toml" try "$key" -r 1/min
  # The key must be the certificate's: the wrong one is refused, naming its line.
  sed -i 's|^key = .*|key = "'"$CERTS"'/server.key"|' limits.toml
  expect_status 3 rl --config "$TEST_DIR/limits.toml" try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "cannot use the private key \"$CERTS/server.key\" ([store] key at $TEST_DIR/limits.toml:5)"
  # A key without its certificate.
  sed -i '/^cert = /d' limits.toml
  expect_status 2 rl --config "$TEST_DIR/limits.toml" try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "limits.toml:4: key names the private key of a client certificate, but [store] has no cert"
}

# run hands its command the TLS files of its command line: a nested pause reaches the store.
test_run_passes_its_tls_files_to_its_command() {
  local key=nested-$RANDOM
  local -a store=(--store "rediss://localhost:$MTLS_PORT" --store-ca "$CERTS/ca.crt"
    --store-cert "$CERTS/client.crt" --store-key "$CERTS/client.key")
  expect_status 0 rl "${store[@]}" run "$key" -r 5/min -- \
    sh -c '"$0" pause "$RATELIMIT_KEY" 30s' "$RATELIMIT"
  expect_status 1 rl "${store[@]}" try "$key" -r 5/min
  expect_contains "$ERR" "paused"
}

test_tls_certificate_for_another_host_exits_3() {
  # The certificate is signed by the CA given, but names localhost, not 127.0.0.1.
  expect_status 3 rl --store "rediss://127.0.0.1:$MTLS_PORT" --store-ca "$CERTS/ca.crt" \
    --store-cert "$CERTS/client.crt" --store-key "$CERTS/client.key" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:$MTLS_PORT: the server's certificate does not verify: IP address mismatch"
}

test_plain_client_on_the_tls_port_fails_within_the_timeout() {
  local started elapsed
  started=$(now_ms)
  expect_status 3 rl --store "redis://127.0.0.1:$TLS_PORT" --store-timeout 0.5s try k -r 1/s
  elapsed=$(($(now_ms) - started))
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:$TLS_PORT: "
  expect_true "took $elapsed ms, expected under 3 s" test "$elapsed" -lt 3000
}

test_tls_client_on_a_plain_port_fails_within_the_timeout() {
  local started elapsed
  started=$(now_ms)
  expect_status 3 rl --store "rediss://127.0.0.1:$PLAIN_PORT" --store-timeout 0.5s try k -r 1/s
  elapsed=$(($(now_ms) - started))
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis 127.0.0.1:$PLAIN_PORT: "
  expect_true "took $elapsed ms, expected under 3 s" test "$elapsed" -lt 3000
}

test_silent_tls_server_exits_3_within_the_timeout() {
  local started elapsed
  kill -STOP "${SERVER_PIDS[1]}"
  started=$(now_ms)
  expect_status 3 rl --store "rediss://127.0.0.1:$TLS_PORT" --store-ca "$CERTS/ca.crt" \
    --store-timeout 0.5s try k -r 1/s
  elapsed=$(($(now_ms) - started))
  kill -CONT "${SERVER_PIDS[1]}"
  expect_one_line
  expect_contains "$ERR" "cannot connect within 0.5s (--store-timeout)"
  expect_true "took $elapsed ms, expected 0.5 to 3 s" test "$elapsed" -ge 450 -a "$elapsed" -lt 3000
}

test_unix_socket_with_the_password_from_the_environment() {
  local key=unix-$RANDOM
  RATELIMIT_STORE_PASSWORD='s3cret pass' expect_status 0 rl --store "unix://$SOCKET?db=2" \
    try "$key" -r 1/min
  RATELIMIT_STORE_PASSWORD='s3cret pass' expect_status 1 rl --store "unix://$SOCKET?db=2" \
    try "$key" -r 1/min
  # In database 2, under the prefix.
  expect_eq 1 "$(redis-cli -s "$SOCKET" -a 's3cret pass' --no-auth-warning -n 2 \
    exists "ratelimit:{$key}")" "the key in database 2"
  # Without a password the server refuses; a password in the URL wins over the variable's.
  expect_status 3 rl --store "unix://$SOCKET" try "$key" -r 1/min
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis $SOCKET: authentication required"
  RATELIMIT_STORE_PASSWORD=wrong expect_status 1 rl --store "unix://:s3cret%20pass@$SOCKET?db=2" \
    try "$key" -r 1/min
  RATELIMIT_STORE_PASSWORD=wrong expect_status 3 rl --store "unix://$SOCKET" try "$key" -r 1/min
  expect_contains "$ERR" "wrong password or user"
}

test_password_from_the_environment_over_tcp_and_an_acl_user() {
  RATELIMIT_STORE_PASSWORD='s3cret pass' expect_status 0 \
    rl --store "redis://127.0.0.1:$PLAIN_PORT" try k -r 1/min
  RATELIMIT_STORE_PASSWORD='s3cret pass' expect_status 1 \
    rl --store "redis://default@127.0.0.1:$PLAIN_PORT" try k -r 1/min
  # A user and no password anywhere: a usage error naming both places.
  expect_status 2 rl --store "redis://default@127.0.0.1:$PLAIN_PORT" try k -r 1/min
  expect_one_line
  expect_contains "$ERR" "names the user \"default\" but no password: give it in RATELIMIT_STORE_PASSWORD or in the URL"
}

test_missing_socket_exits_3() {
  expect_status 3 rl --store "unix://$WORK_ROOT/none.sock" try k -r 1/s
  expect_one_line
  expect_contains "$ERR" "ratelimit: redis $WORK_ROOT/none.sock: cannot connect: no such file or directory"
}

# The TLS relays (processes named ratelimit-tls) started in the test's directory.
relays_of_test() {
  local pid
  for pid in $(pgrep -x ratelimit-tls); do
    [ "$(readlink "/proc/$pid/cwd")" = "$TEST_DIR" ] && echo "$pid"
  done
}

# await_relay: waits (up to 5 s) until a relay listens on its socket under $TEST_DIR/state;
# sets RELAY_SOCKET.
await_relay() {
  local tries
  for tries in $(seq 100); do
    RELAY_SOCKET=$(find state -type s -name 'relay-*.sock' 2>/dev/null)
    [ -n "$RELAY_SOCKET" ] && return 0
    sleep 0.05
  done
  fail "no relay socket under state/"
  return 1
}

test_a_tls_relay_serves_the_decisions_that_follow() {
  local store=rediss://127.0.0.1:$TLS_PORT key=relay-$RANDOM tries
  export XDG_STATE_HOME=$TEST_DIR/state RATELIMIT_STORE_CA=$CERTS/ca.crt RATELIMIT_TLS_RELAY=on
  expect_status 0 rl --store "$store" try "$key" -r 2/min
  await_relay || return
  expect_eq 700 "$(stat -c %a "$RELAY_SOCKET")" "the socket's mode"
  expect_true "a relay runs" test -n "$(relays_of_test)"
  # The next decisions go through it: they do not load OpenSSL, and decide the same.
  expect_status 0 env LD_DEBUG=files "$RATELIMIT" --store "$store" try "$key" -r 2/min
  expect_not_contains "$ERR" "libssl" "the libraries loaded through the relay"
  expect_status 1 env LD_DEBUG=files "$RATELIMIT" --store "$store" try "$key" -r 2/min
  expect_not_contains "$ERR" "libssl" "the libraries loaded through the relay"
  expect_contains "$ERR" "ratelimit: \"$key\" limited"
  # Without it, a decision loads OpenSSL (so the checks above can see it).
  expect_status 1 env RATELIMIT_TLS_RELAY=off LD_DEBUG=files "$RATELIMIT" --store "$store" try \
    "$key" -r 2/min
  expect_contains "$ERR" "libssl" "the libraries loaded without the relay"
  # A waiter through the relay wakes and is granted.
  expect_status 0 rl --store "$store" wait "slow-$key" -r 1/s -b 1
  expect_status 0 rl --store "$store" wait "slow-$key" -r 1/s -b 1
  # Eight at once, each with a worker of its own, decide as eight alone would.
  local pids=() pid granted=0
  for tries in $(seq 8); do
    rl --store "$store" try "eight-$key" -r 6/min &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" && granted=$((granted + 1))
  done
  expect_eq 6 "$granted" "decisions granted of eight at once through the relay"
  # A run -j waiter blocks on its connection through the relay until the slot is free.
  rl --store "$store" run -j 1 "held-$key" -- sh -c 'echo held >holding; sleep 1' &
  pid=$!
  wait_for_file holding
  local started
  started=$(now_ms)
  expect_status 0 rl --store "$store" run -j 1 "held-$key" -- true
  expect_true "the second command waited for the first (at least 400 ms)" \
    test $(($(now_ms) - started)) -ge 400
  wait "$pid"
  # The relay and its workers exit once the socket is removed.
  rm "$RELAY_SOCKET"
  for tries in $(seq 100); do
    [ -z "$(relays_of_test)" ] && break
    sleep 0.05
  done
  expect_eq "" "$(relays_of_test)" "the relay's processes after its socket was removed"
  # With the relay off, none is started.
  RATELIMIT_TLS_RELAY=off expect_status 0 rl --store "$store" try "off-$key" -r 2/min
  expect_eq "" "$(find state -type s)" "sockets with the relay off"
  expect_eq "" "$(relays_of_test)" "relays with the relay off"
}

# What the server says reaches the decision through the relay as it would without one.
test_a_tls_relay_tells_the_decision_what_the_server_says() {
  local store key=told-$RANDOM server
  export XDG_STATE_HOME=$TEST_DIR/state RATELIMIT_TLS_RELAY=on
  launch_redis relayed redis_log_says_ready --tls-port PORT "${tls_arguments[@]}" \
    --tls-auth-clients no || { fail "redis-server did not start"; return; }
  server=$LAUNCHED_PID
  store=rediss://127.0.0.1:$LAUNCHED_PORT
  cp "$CERTS/ca.crt" my-ca.pem
  export RATELIMIT_STORE_CA=$TEST_DIR/my-ca.pem
  expect_status 0 rl --store "$store" try "$key" -r 5/min
  await_relay || { kill "$server"; return; }
  expect_status 0 rl --store "$store" try "$key" -r 5/min
  # The CA file replaced: its workers' connections, made before, are not used.
  cp "$CERTS/other-ca.crt" my-ca.pem
  expect_status 3 rl --store "$store" try "$key" -r 5/min
  expect_contains "$ERR" "the server's certificate does not verify: "
  cp "$CERTS/ca.crt" my-ca.pem
  expect_status 0 rl --store "$store" try "$key" -r 5/min
  kill "$server"
  wait "$server"
  expect_status 3 rl --store "$store" try "$key" -r 5/min
  local through=$ERR
  expect_contains "$through" "cannot connect: connection refused"
  RATELIMIT_TLS_RELAY=off expect_status 3 rl --store "$store" try "$key" -r 5/min
  expect_eq "$ERR" "$through" "stderr through the relay, and without it"
  rm -f "$RELAY_SOCKET"
}

run_suite
