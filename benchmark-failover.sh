#!/usr/bin/env bash
# Failover: kill -9 the leader of shard 0 of a 3-server RF=3 cluster under
# load, and time from the kill to the first write to shard 0 that
# succeeds, as seen by a client writing every 10 ms with 1 s attempt
# timeouts (kvsctl probe). The killed server is restarted after each trial.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: ./benchmark-failover.sh [--trials N] [--port P] [-h|--help]

Starts three local servers (127.0.0.1-3, ports P..P+2, default 9300) with
-rf 3, a light background load (kvsclient, 8 goroutines x 256 ops), and a
probe writing to shard 0 every 10 ms. Each trial (default 10) waits 8 s,
kills the leader of shard 0 with SIGKILL, measures the time to the probe's
next successful write, and restarts the killed server with its data dir.
Prints each trial, then the median and max; writes failover.csv under
logs/failover-<timestamp>/.
USAGE
}

TRIALS=10
PORT=9300
while (( $# )); do
    case $1 in
        --trials) TRIALS=$2; shift 2 ;;
        --port) PORT=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")" && pwd)
OUT="$ROOT/logs/failover-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient ./cmd/kvsctl)
# shellcheck source=lib/replicas.sh
source "$ROOT/lib/replicas.sh"

OTHER_PIDS=()
cleanup() {
    for pid in "${OTHER_PIDS[@]+"${OTHER_PIDS[@]}"}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${OTHER_PIDS[@]+"${OTHER_PIDS[@]}"}"; do wait "$pid" 2>/dev/null || true; done
    replicas_stop_all
}
trap cleanup EXIT

replicas_start_all
replicas_wait_leaders
"$ROOT/bin/kvsclient" -hosts "$REPLICA_PEERS" -numClients 8 -batchSize 256 -records 100000 -secs 100000 \
    > "$OUT/load.log" 2>&1 &
OTHER_PIDS+=($!)
"$ROOT/bin/kvsctl" -hosts "$REPLICA_PEERS" -timeout 5s probe -for 0 0 > "$OUT/probe.log" 2>&1 &
OTHER_PIDS+=($!)

echo "trial,killed,failover_ms" > "$OUT/failover.csv"
results=()
for ((t = 1; t <= TRIALS; t++)); do
    sleep 8
    leader=$("$ROOT/bin/kvsctl" -hosts "$REPLICA_PEERS" -timeout 2s leader 0)
    victim=$(replicas_index "$leader")
    t0=$(date +%s%3N)
    replicas_kill "$victim"
    # Writes that end before the killed process is reaped may have been
    # answered by it; count from the kill, but only writes ending later.
    dead=$(date +%s%3N)
    first=""
    for ((try = 0; try < 200; try++)); do
        sleep 0.05
        first=$(awk -v dead="$dead" '$1 == "ok" && $2 > dead { print $2; exit }' "$OUT/probe.log")
        if [[ -n $first ]]; then break; fi
    done
    if [[ -z $first ]]; then
        echo "trial $t: no successful write within 10 s of killing $leader" >&2
        exit 1
    fi
    ms=$((first - t0))
    results+=("$ms")
    echo "trial $t: killed $leader (leader of shard 0); first write after $ms ms"
    echo "$t,$leader,$ms" >> "$OUT/failover.csv"
    replicas_start "$victim"
done
sorted=$(printf '%s\n' "${results[@]}" | sort -n)
median=$(echo "$sorted" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
maxv=$(echo "$sorted" | tail -n 1)
echo "failover over $TRIALS trials: median $median ms, max $maxv ms (min $(echo "$sorted" | head -n 1) ms)"
echo "results: $OUT/failover.csv"
