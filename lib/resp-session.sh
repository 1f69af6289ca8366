#!/usr/bin/env bash
# resp-session.sh PORT - a scripted redis-cli session against the RESP
# server on 127.0.0.1:PORT: each command's output must be the one given.
# Exits non-zero at the first difference. Used by benchmark-resp.sh.
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help || $# -ne 1 ]]; then
    echo "Usage: $0 PORT   (runs a redis-cli session against 127.0.0.1:PORT)"
    exit 0
fi
PORT=$1
KEY="session:$$"
fails=0

# expect "OUTPUT" ARGS...: redis-cli ARGS must print OUTPUT.
expect() {
    local want=$1 got
    shift
    got=$(redis-cli --no-raw -p "$PORT" "$@" 2>&1) || true
    if [[ $got == "$want" ]]; then
        printf 'ok    redis-cli %s\n' "$*"
    else
        printf 'FAIL  redis-cli %s\n      want %q\n      got  %q\n' "$*" "$want" "$got"
        fails=$((fails + 1))
    fi
}

expect 'PONG' ping
expect '"hello"' echo hello
expect 'OK' set "$KEY" v1
expect '"v1"' get "$KEY"
expect '(nil)' get "$KEY:missing"
expect 'OK' mset "$KEY:a" 1 "$KEY:b" 2
expect $'1) "1"\n2) (nil)\n3) "2"' mget "$KEY:a" "$KEY:missing" "$KEY:b"
expect '(integer) 2' exists "$KEY:a" "$KEY:b" "$KEY:missing"
expect '(integer) 1' del "$KEY:a" "$KEY:missing"
expect 'OK' select 0
expect '(error) ERR DB index is out of range (batchkv has database 0 only)' select 1
expect '(integer) 1' setnx "$KEY:nx" x
expect '(integer) 0' setnx "$KEY:nx" y
expect '"x"' getset "$KEY:nx" z
expect '(nil)' set "$KEY:nx" w NX
expect 'OK' set "$KEY:nx" w XX
expect '"w"' set "$KEY:nx" u GET
expect "(error) ERR SET option EX is not supported: keys in batchkv do not expire" set "$KEY" v EX 10
expect "(error) ERR unknown command 'flushall', with args beginning with: " flushall
expect $'1) "save"\n2) ""' config get save
# A session on one connection, read from stdin as redis-cli does when piped.
got=$(printf 'SET %s piped\nGET %s\nPING\n' "$KEY" "$KEY" | redis-cli -p "$PORT" 2>&1 || true)
if [[ $got == $'OK\npiped\nPONG' ]]; then
    echo "ok    redis-cli session on stdin (SET, GET, PING)"
else
    printf 'FAIL  redis-cli session on stdin: got %q\n' "$got"
    fails=$((fails + 1))
fi
redis-cli -p "$PORT" del "$KEY" "$KEY:b" "$KEY:nx" > /dev/null
if ((fails > 0)); then
    echo "$fails commands answered wrongly"
    exit 1
fi
echo "redis-cli session: every answer as expected"
