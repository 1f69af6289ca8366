# shellcheck shell=bash
# Helpers for the replication experiments: three local replicated servers
# on 127.0.0.1-3, started and stopped by PID. Source after setting ROOT,
# OUT (the run's directory) and PORT (the first port); call
# replicas_start_all, then replicas_stop_all in an EXIT trap.

REPLICA_ADDRS=()
REPLICA_PIDS=()
REPLICA_EXTRA_ARGS=${REPLICA_EXTRA_ARGS:-}
for i in 0 1 2; do REPLICA_ADDRS+=("127.0.0.$((i + 1)):$((PORT + i))"); done
REPLICA_PEERS=$(IFS=,; echo "${REPLICA_ADDRS[*]}")

# replicas_start I: start server I on its address and data dir, appending
# to its log; waits until it accepts connections.
replicas_start() {
    local i=$1 addr=${REPLICA_ADDRS[$1]}
    # shellcheck disable=SC2086 # extra args are a list of flags
    "$ROOT/bin/kvsserver" -host "${addr%:*}" -port "${addr##*:}" -peers "$REPLICA_PEERS" -self "$addr" \
        -rf 3 -data-dir "$OUT/data/server$i" -report 0 $REPLICA_EXTRA_ARGS >> "$OUT/server$i.log" 2>&1 &
    REPLICA_PIDS[i]=$!
    for ((try = 0; try < 100; try++)); do
        if (exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "server $addr did not start; see $OUT/server$i.log" >&2
    return 1
}

replicas_start_all() { for i in 0 1 2; do replicas_start "$i"; done; }

# replicas_kill I: SIGKILL server I and reap it.
replicas_kill() {
    local pid=${REPLICA_PIDS[$1]:-}
    if [[ -n $pid ]]; then
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        REPLICA_PIDS[$1]=""
    fi
}

replicas_stop_all() {
    for pid in "${REPLICA_PIDS[@]}"; do
        if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
    done
    for pid in "${REPLICA_PIDS[@]}"; do
        if [[ -n $pid ]]; then wait "$pid" 2>/dev/null || true; fi
    done
}

# replicas_index ADDR: the index of the server at ADDR.
replicas_index() {
    for i in 0 1 2; do
        if [[ ${REPLICA_ADDRS[$i]} == "$1" ]]; then echo "$i"; return 0; fi
    done
    return 1
}

# replicas_wait_leaders: wait until every shard has a leader.
replicas_wait_leaders() {
    for ((try = 0; try < 100; try++)); do
        local ok=1
        for sh in 0 1 2; do
            "$ROOT/bin/kvsctl" -hosts "$REPLICA_PEERS" -timeout 1s leader "$sh" > /dev/null 2>&1 || ok=0
        done
        if (( ok )); then return 0; fi
        sleep 0.2
    done
    echo "shards have no leaders" >&2
    return 1
}
