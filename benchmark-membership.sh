#!/usr/bin/env bash
# benchmark-membership.sh - the figures of docs/membership.md:
#   rf3: a 4th server added to 3 loaded RF=3 servers (1M keys, 12 shards):
#        how long the add takes, the clients' lowest second while it runs
#        against their median before, and the ops they had to resend
#        (run-cluster.sh --spares 1 --grow-at, then kvsplot grow).
#   rf1: the same at RF=1, memory only (run-cluster.sh gives the servers
#        -in-memory: one-replica Raft groups kept in memory), under a
#        light load, with a probe writing to every shard every 2 ms: the
#        longest gap between two acknowledged writes of each shard that
#        moved, and of those that did not.
# Each part prints its figures; runs stay in logs/ (logs/latest is the last).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

usage() {
    echo "usage: $0 [rf3|rf1|all] [repeats]   (default: all 1)"
}
PART="${1:-all}"
REPEATS="${2:-1}"
case $PART in rf3|rf1|all) ;; -h|--help) usage; exit 0 ;; *) usage >&2; exit 2 ;; esac
if ! [[ $REPEATS =~ ^[1-9][0-9]*$ ]]; then usage >&2; exit 2; fi

go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient ./cmd/kvsctl ./cmd/kvsreport ./cmd/kvsplot

rf3() {
    ./run-cluster.sh --no-build --port 9700 --spares 1 --grow-at 15 3 1 "-rf 3 -shards 12" "-secs 45" > /dev/null
    echo "rf3 run $(readlink logs/latest):"
    grep -E '^grow:' <("$ROOT/bin/kvsplot" grow logs/latest)
    grep -E '^done:' logs/latest/grow.log
}

PROBES=()
# shellcheck disable=SC2317 # called by trap
stop_probes() {
    for pid in "${PROBES[@]+"${PROBES[@]}"}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PROBES[@]+"${PROBES[@]}"}"; do wait "$pid" 2>/dev/null || true; done
    PROBES=()
}
trap stop_probes EXIT

rf1() {
    local shards=12 port=9720
    ./run-cluster.sh --no-build --port $port --spares 1 --grow-at 20 3 1 "-rf 1 -shards $shards" \
        "-secs 40 -numClients 8 -batchSize 1024" > /dev/null &
    local run=$!
    local hosts="127.0.0.1:$port"
    # Wait for the members to answer, then probe every shard.
    for ((try = 0; try < 100; try++)); do
        if bin/kvsctl -hosts "$hosts" map > /dev/null 2>&1; then break; fi
        sleep 0.2
    done
    local dir
    dir="logs/$(readlink logs/latest)"
    for ((s = 0; s < shards; s++)); do
        bin/kvsctl -hosts "$hosts" -timeout 2s -interval 2ms probe -for 0 "$s" > "$dir/probe-$s.log" 2>&1 &
        PROBES+=($!)
    done
    wait "$run" || true
    stop_probes
    local from to
    from=$(sed -n 's/^add-server .* at_unix_ms \([0-9]*\)/\1/p' "$dir/grow.log" | head -1)
    to=$(sed -n 's/^grown at_unix_ms \([0-9]*\)/\1/p' "$dir/grow.log")
    echo "rf1 run $dir: add-server took $((to - from)) ms"
    grep -E '^done:|^  shard' "$dir/grow.log"
    for ((s = 0; s < shards; s++)); do
        local moved=no
        if grep -q "^  shard $s:" "$dir/grow.log"; then moved=yes; fi
        # The longest time between two acknowledged writes that falls in
        # the add, and the same over the 5 s before it.
        awk -v from="$from" -v to="$to" -v s="$s" -v moved="$moved" '
            $1 == "ok" { t = $2
                if (last > 0) { gap = t - last
                    if (t > from && last < to) { if (gap > during) during = gap }
                    else if (t <= from && last >= from - 5000) { if (gap > before) before = gap } }
                last = t }
            $1 == "fail" && $2 > from && $2 < to { fails++ }
            END { printf "  shard %d moved=%s: longest gap between acked writes %d ms while adding, %d ms in the 5 s before; %d writes failed while adding\n", s, moved, during, before, fails }
        ' "$dir/probe-$s.log"
    done
}

for ((i = 1; i <= REPEATS; i++)); do
    if [[ $PART == rf3 || $PART == all ]]; then rf3; fi
    if [[ $PART == rf1 || $PART == all ]]; then rf1; fi
done
