#!/usr/bin/env bash
# Raft logs on disk under large writes: three local RF=3 servers under
# YCSB-A of 4 KiB values, with the logs bounded by bytes and not, in
# alternate rounds.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: ./benchmark-logbytes.sh [--bound SIZE] [--rounds N] [--secs S] [--client-args ARGS] [--server-args ARGS] [--port P] [-h|--help]

Rounds A B: three local servers (127.0.0.1-3, ports P..P+2, default 9500)
with -rf 3 -max-memory 1GiB and ARGS, first with -raft-log-bytes SIZE
(default 1GiB), then with -raft-log-bytes 0 (entry counts only); each
round kvsclient -records 100000 -valueBytes 4096 -workload YCSB-A -secs S
(default 40) and CLIENT ARGS (default "-batchSize 256 -numClients 64").
Every second the script sums the servers' WAL files and data dirs (du);
each run prints its throughput (ops the servers refused, such as writes
past -max-memory, are not in it: they are counted apart), batch p99, the
peaks of both, and each server's peak RSS.
USAGE
}

BOUND=1GiB
ROUNDS=2
SECS=40
CLIENT_ARGS="-batchSize 256 -numClients 64"
SERVER_ARGS=""
PORT=9500
while (( $# )); do
    case $1 in
        --bound) BOUND=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --secs) SECS=$2; shift 2 ;;
        --client-args) CLIENT_ARGS=$2; shift 2 ;;
        --server-args) SERVER_ARGS=$2; shift 2 ;;
        --port) PORT=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")" && pwd)
RUNS="$ROOT/logs/logbytes-$(date +%Y%m%d-%H%M%S)"
(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient)
OUT=""
# shellcheck source=lib/replicas.sh
source "$ROOT/lib/replicas.sh"
trap replicas_stop_all EXIT

# run BOUND: one run with -raft-log-bytes BOUND; prints its line.
run() {
    OUT="$RUNS/bound-$1-$(date +%H%M%S)"
    mkdir -p "$OUT"
    REPLICA_EXTRA_ARGS="-max-memory 1GiB -raft-log-bytes $1 $SERVER_ARGS"
    replicas_start_all
    replicas_wait_leaders
    # shellcheck disable=SC2086 # client args are a list of flags
    "$ROOT/bin/kvsclient" -hosts "$REPLICA_PEERS" -records 100000 -valueBytes 4096 -workload YCSB-A -secs "$SECS" \
        $CLIENT_ARGS > "$OUT/client.log" 2>&1 &
    local client=$! wal=0 dirs=0 w d
    while kill -0 "$client" 2>/dev/null; do
        w=$(du -scb "$OUT"/data/server*/*/wal 2>/dev/null | tail -1 | cut -f1)
        d=$(du -sb "$OUT/data" 2>/dev/null | cut -f1)
        (( w > wal )) && wal=$w
        (( d > dirs )) && dirs=$d
        sleep 1
    done
    wait "$client" || true
    # The servers' peak RSS (VmHWM), read before they stop.
    local rss=() pid
    for pid in "${REPLICA_PIDS[@]}"; do
        rss+=("$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status")")
    done
    replicas_stop_all
    REPLICA_PIDS=()
    printf '%-26s %s (%s refused), batch p99 %s, peak WAL of the 3 servers %d MiB, peak data dirs %d MiB, servers peak RSS %s MiB\n' \
        "-raft-log-bytes $1:" "$(grep -E '^throughput' "$OUT/client.log" | tail -1)" \
        "$(grep -oE 'refused_ops [0-9]+' "$OUT/client.log" | awk '{print $2}')" \
        "$(grep -E '^batch latency' "$OUT/client.log" | tail -1 | awk '{print $6}')" $((wal >> 20)) $((dirs >> 20)) \
        "$(IFS=/; echo "${rss[*]}")"
    rm -rf "$OUT/data"
}

for ((r = 1; r <= ROUNDS; r++)); do
    run "$BOUND"
    run 0
done
echo "logs: $RUNS"
