#!/usr/bin/env bash
# Catch-up: stop (SIGKILL) one server of a 3-server RF=3 cluster, write N
# keys (default 100,000) through the others, restart it, and time until it
# has applied everything its shards' leaders have committed.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: ./benchmark-catchup.sh [--writes N] [--value-bytes B] [--server-args ARGS] [--snapshot] [--port P] [-h|--help]

Starts three local servers (127.0.0.1-3, ports P..P+2, default 9400) with
-rf 3 and ARGS, kills server 3 with SIGKILL, writes N keys of B bytes
(default 128; kvsclient preload, 8192-op batches) and prints how long that
took and the two live servers' peak resident memory (VmHWM), restarts
server 3 and polls kvsctl status every 50 ms until, for every shard, its
applied index reaches the leader's commit index. --snapshot makes the
shards snapshot every 16 entries and keep only 16, so the restarted server
is sent a snapshot instead of the log.
USAGE
}

WRITES=100000
VALUE_BYTES=128
SERVER_ARGS=""
PORT=9400
REPLICA_EXTRA_ARGS=""
SNAPSHOT=0
while (( $# )); do
    case $1 in
        --writes) WRITES=$2; shift 2 ;;
        --value-bytes) VALUE_BYTES=$2; shift 2 ;;
        --server-args) SERVER_ARGS=$2; shift 2 ;;
        --snapshot) REPLICA_EXTRA_ARGS="-raft-snapshot-entries 16 -raft-trailing-logs 16 -raft-snapshot-interval 200ms"; SNAPSHOT=1; shift ;;
        --port) PORT=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

REPLICA_EXTRA_ARGS="$REPLICA_EXTRA_ARGS $SERVER_ARGS"
ROOT=$(cd "$(dirname "$0")" && pwd)
OUT="$ROOT/logs/catchup-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient ./cmd/kvsctl)
# shellcheck source=lib/replicas.sh
source "$ROOT/lib/replicas.sh"
trap replicas_stop_all EXIT

replicas_start_all
replicas_wait_leaders
replicas_kill 2
echo "stopped ${REPLICA_ADDRS[2]}; writing $WRITES keys of $VALUE_BYTES bytes"
"$ROOT/bin/kvsclient" -hosts "${REPLICA_ADDRS[0]}" -records "$WRITES" -valueBytes "$VALUE_BYTES" -secs 1 -numClients 1 -batchSize 1 \
    > "$OUT/writer.log" 2>&1
grep preloaded "$OUT/writer.log"
hwm() { awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' "/proc/$1/status"; }
echo "peak resident memory: ${REPLICA_ADDRS[0]} $(hwm "${REPLICA_PIDS[0]}"), ${REPLICA_ADDRS[1]} $(hwm "${REPLICA_PIDS[1]}")"

# lag prints, per shard, the leader's commit index minus server 3's
# applied index, summed; 0 means current.
lag() {
    "$ROOT/bin/kvsctl" -hosts "$REPLICA_PEERS" -timeout 1s status 2>/dev/null | awk -v me="${REPLICA_ADDRS[2]}" '
        $1 ~ /^[0-9]+$/ { if ($3 == "Leader") commit[$1] = $7; if ($2 == me) applied[$1] = $8; snap[$1] = ($2 == me) ? $9 : snap[$1] }
        END { n = 0; lag = 0; for (s in commit) { n++; lag += commit[s] - applied[s] }; if (n == 0) print "?"; else print lag }'
}
if (( SNAPSHOT )); then
    # Wait until every live replica has snapshotted past what server 3 has.
    for ((try = 0; try < 200; try++)); do
        snaps=$("$ROOT/bin/kvsctl" -hosts "${REPLICA_ADDRS[0]}" -timeout 1s status 2>/dev/null |
            awk -v me="${REPLICA_ADDRS[2]}" '$1 ~ /^[0-9]+$/ && $2 != me && $9 == 0 { n++ } END { print n + 0 }')
        if [[ $snaps == 0 ]]; then break; fi
        sleep 0.1
    done
fi
t0=$(date +%s%3N)
replicas_start 2
for ((try = 0; try < 1200; try++)); do
    l=$(lag)
    if [[ $l == 0 ]]; then break; fi
    sleep 0.05
done
t1=$(date +%s%3N)
if [[ $l != 0 ]]; then echo "server 3 did not catch up within 60 s (lag $l entries)" >&2; exit 1; fi
"$ROOT/bin/kvsctl" -hosts "$REPLICA_PEERS" status | tee "$OUT/status.txt"
echo "catch-up after $WRITES writes: $((t1 - t0)) ms from restart to current (includes the restart)"
