#!/usr/bin/env bash
# benchmark-memory.sh - the memory a server takes per key, against Redis
# holding the same keys and values, loaded and read by the same client.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KEYS="2000000 10000000"
ROUNDS=1
READ_SECS=3
PORT=29180
REDIS_PORT=29479
SERVER_ARGS=""
ATTACK_CONNS="16 48"
ATTACK_MAX_MEMORY=1GiB
ATTACK_SECS=10
SMALL_FOLLOWER=512MiB
FOLLOWER_SECS=30
OUT=""

usage() {
    cat <<USAGE
Usage: $0 [options]

For each key count in KEYS, ROUNDS times, alternately:
  (a) redis-server 127.0.0.1 (persistence off, maxmemory unset) and
  (b) one kvsserver (RF=1, memory only, SERVER_ARGS),
each loaded by the same load client, kvsclient (-protocol resp against
Redis, the binary protocol against ours): every key "0".."N-1" written
once with a 128-byte value, then READ_SECS seconds of YCSB-C (reads only,
Zipfian 0.99) so that the replies' buffers count too. Then the server's
resident memory (VmRSS, and its peak VmHWM, from /proc) over the keys.

Prints bytes per key for each, and ours over Redis's (under 1 is leaner
than Redis). Installs Redis from Debian's packages if missing; needs
about 3.5 GiB of memory free at 10,000,000 keys.

Then the pipelining attack, for each count in ATTACK_CONNS: one kvsserver
with -max-memory ATTACK_MAX_MEMORY, and kvsclient -stall-conns N (N
connections that each pipeline 6 batches of 400 gets of a 1 MiB value and
never read a reply) while a small load (8 goroutines, 512-op batches,
YCSB-B over 100,000 keys) runs for ATTACK_SECS seconds beside them.
Prints the server's peak RSS over its -max-memory and the small load's
throughput. Redis is left out here: its normal clients' output buffers
are unbounded by default, so the same attack would hold every reply
(tens of GB) until the machine runs out of memory.

Then a follower with less room than its peers: three local servers at
RF=3 (127.0.0.1-3, ports PORT..PORT+2), two at -max-memory 4GiB and the
third at SMALL_FOLLOWER, under kvsclient -preload=false -theta 0
-records 200000 -valueBytes 4096 -workload YCSB-A -batchSize 256
-numClients 64 for FOLLOWER_SECS seconds (every put of a new key adds to every replica's stores, 800 MB
in all). Prints each server's peak RSS and its stores at the end
(kvsctl top) against its -max-memory, and the puts refused.

Options (defaults in brackets):
  --keys "A B"        key counts [$KEYS]; "" skips the part against Redis
  --rounds N          rounds of each system per key count [$ROUNDS]
  --read-secs N       seconds of reads after the load [$READ_SECS]
  --server-args ARGS  extra kvsserver flags (quoted) ["$SERVER_ARGS"]
  --attack-conns "A B"  stalled connections per attack run ["$ATTACK_CONNS"]; "" skips it
  --attack-max-memory SIZE  the attacked server's -max-memory [$ATTACK_MAX_MEMORY]
  --attack-secs N     seconds of the small load beside the attack [$ATTACK_SECS]
  --small-follower SIZE  the third replicated server's -max-memory [$SMALL_FOLLOWER]; "" skips that part
  --follower-secs N   seconds of load on the three [$FOLLOWER_SECS]
  --port N            port of kvsserver on 127.0.0.1 [$PORT]
  --redis-port N      port of redis-server on 127.0.0.1 [$REDIS_PORT]
  --quick             1 round at 200,000 keys, 1 s of reads
  --out DIR           write results to DIR [logs/memory-<timestamp>]
  -h, --help          this help
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --keys) KEYS="${2?}"; shift 2 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --read-secs) READ_SECS="${2:?}"; shift 2 ;;
        --server-args) SERVER_ARGS="${2?}"; shift 2 ;;
        --attack-conns) ATTACK_CONNS="${2?}"; shift 2 ;;
        --attack-max-memory) ATTACK_MAX_MEMORY="${2:?}"; shift 2 ;;
        --attack-secs) ATTACK_SECS="${2:?}"; shift 2 ;;
        --small-follower) SMALL_FOLLOWER="${2?}"; shift 2 ;;
        --follower-secs) FOLLOWER_SECS="${2:?}"; shift 2 ;;
        --port) PORT="${2:?}"; shift 2 ;;
        --redis-port) REDIS_PORT="${2:?}"; shift 2 ;;
        --quick) ROUNDS=1; KEYS=200000; READ_SECS=1; ATTACK_CONNS=4; ATTACK_SECS=2; FOLLOWER_SECS=10; shift ;;
        --out) OUT="${2:?}"; shift 2 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in $KEYS $ATTACK_CONNS "$ROUNDS" "$READ_SECS" "$ATTACK_SECS" "$FOLLOWER_SECS" "$PORT" "$REDIS_PORT"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $n (see --help)" >&2; exit 2; }
done

# shellcheck source=lib/redis.sh
source "$ROOT/lib/redis.sh"
[[ -z $KEYS ]] || redis_install redis-server

OUT="${OUT:-$ROOT/logs/memory-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
CSV="$OUT/memory.csv"
echo "keys,round,system,rss_bytes,peak_rss_bytes,bytes_per_key,peak_bytes_per_key" > "$CSV"
echo "keys=\"$KEYS\" rounds=$ROUNDS read_secs=$READ_SECS value_bytes=128 port=$PORT redis_port=$REDIS_PORT server_args=\"$SERVER_ARGS\""
echo "attack_conns=\"$ATTACK_CONNS\" attack_max_memory=$ATTACK_MAX_MEMORY attack_secs=$ATTACK_SECS small_follower=$SMALL_FOLLOWER follower_secs=$FOLLOWER_SECS"
[[ -z $KEYS ]] || echo "redis: $(redis-server --version)"
echo "results: $OUT"

trap procs_stop EXIT
trap 'exit 130' INT TERM

(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient ./cmd/kvsctl)

# status_kb PID FIELD: a field of /proc/PID/status, in kB.
status_kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# measure KEYS ROUND SYSTEM PID PORT PROTOCOL: load and read KEYS keys on
# the server PID through kvsclient, then record its memory.
measure() {
    local keys=$1 round=$2 system=$3 pid=$4 port=$5 protocol=$6 rss hwm
    "$ROOT/bin/kvsclient" -hosts "127.0.0.1:$port" -protocol "$protocol" -records "$keys" \
        -workload YCSB-C -secs "$READ_SECS" -valueBytes 128 \
        > "$OUT/kvsclient-$system-$keys-$round.txt" 2>&1 ||
        { tail -5 "$OUT/kvsclient-$system-$keys-$round.txt" >&2; exit 1; }
    rss=$(( $(status_kb "$pid" VmRSS) * 1024 ))
    hwm=$(( $(status_kb "$pid" VmHWM) * 1024 ))
    awk -v k="$keys" -v r="$round" -v s="$system" -v rss="$rss" -v hwm="$hwm" \
        'BEGIN { printf "%d,%d,%s,%.0f,%.0f,%.1f,%.1f\n", k, r, s, rss, hwm, rss / k, hwm / k }' >> "$CSV"
    printf '  %-8s %9d keys: RSS %6.0f MiB, %5.1f B/key (peak %5.1f B/key)\n' "$system" "$keys" \
        "$(awk -v b="$rss" 'BEGIN {print b / 1048576}')" \
        "$(awk -v b="$rss" -v k="$keys" 'BEGIN {print b / k}')" \
        "$(awk -v b="$hwm" -v k="$keys" 'BEGIN {print b / k}')"
}

for keys in $KEYS; do
    for round in $(seq "$ROUNDS"); do
        redis_start "$REDIS_PORT" "$OUT/redis-server-$keys-$round.log"
        measure "$keys" "$round" redis "$REDIS_PID" "$REDIS_PORT" resp
        procs_stop
        # shellcheck disable=SC2086 # SERVER_ARGS is a list of flags
        "$ROOT/bin/kvsserver" -host 127.0.0.1 -port "$PORT" $SERVER_ARGS \
            > "$OUT/kvsserver-$keys-$round.log" 2>&1 &
        local_pid=$!
        procs_add "$local_pid"
        wait_port "$PORT"
        measure "$keys" "$round" batchkv "$local_pid" "$PORT" batchkv
        procs_stop
    done
done

# median KEYS SYSTEM FIELD: the median over the rounds.
median() {
    awk -F, -v k="$1" -v s="$2" -v f="$3" '$1 == k && $3 == s {print $f}' "$CSV" | sort -g |
        awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "nan"}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'; }

if [[ -n $KEYS ]]; then
    echo
    {
        echo "| keys | Redis B/key (peak) | batchkv B/key (peak) | batchkv / Redis (peak) |"
        echo "|---:|---:|---:|---:|"
        for keys in $KEYS; do
            r=$(median "$keys" redis 6); rp=$(median "$keys" redis 7)
            b=$(median "$keys" batchkv 6); bp=$(median "$keys" batchkv 7)
            echo "| $keys | $r ($rp) | $b ($bp) | $(ratio "$b" "$r") ($(ratio "$bp" "$rp")) |"
        done
    } | tee "$OUT/memory.md"
    echo "medians over $ROUNDS round(s); written to $OUT/memory.md"
fi

# attack: the pipelining attack, for each count of ATTACK_CONNS.
attack() {
    echo
    echo "the pipelining attack: -max-memory $ATTACK_MAX_MEMORY"
    ATTACK_CSV="$OUT/attack.csv"
    echo "conns,max_memory_bytes,peak_rss_bytes,peak_over_max,load_ops_per_s" > "$ATTACK_CSV"
    for conns in $ATTACK_CONNS; do
        # shellcheck disable=SC2086 # SERVER_ARGS is a list of flags
        "$ROOT/bin/kvsserver" -host 127.0.0.1 -port "$PORT" -max-memory "$ATTACK_MAX_MEMORY" $SERVER_ARGS \
            > "$OUT/kvsserver-attack-$conns.log" 2>&1 &
        attack_pid=$!
        procs_add "$attack_pid"
        wait_port "$PORT"
        "$ROOT/bin/kvsclient" -hosts "127.0.0.1:$PORT" -stall-conns "$conns" -records 100000 \
            -workload YCSB-B -numClients 8 -batchSize 512 -secs "$ATTACK_SECS" \
            > "$OUT/kvsclient-attack-$conns.txt" 2>&1 ||
            { tail -5 "$OUT/kvsclient-attack-$conns.txt" >&2; exit 1; }
        hwm=$(( $(status_kb "$attack_pid" VmHWM) * 1024 ))
        max_bytes=$(awk -F'max_memory=' 'NF > 1 {split($2, a, " "); print a[1]; exit}' "$OUT/kvsserver-attack-$conns.log")
        ops=$(awk '$1 == "throughput" {print $2; exit}' "$OUT/kvsclient-attack-$conns.txt")
        procs_stop
        awk -v c="$conns" -v m="$max_bytes" -v h="$hwm" -v o="${ops:-0}" \
            'BEGIN { printf "%d,%.0f,%.0f,%.2f,%s\n", c, m, h, h / m, o }' >> "$ATTACK_CSV"
        printf '  %3d stalled connections: peak RSS %.0f MiB of %.0f MiB (%.2f), the small load %s ops/s\n' "$conns" \
            "$(awk -v b="$hwm" 'BEGIN {print b / 1048576}')" "$(awk -v b="$max_bytes" 'BEGIN {print b / 1048576}')" \
            "$(awk -v h="$hwm" -v m="$max_bytes" 'BEGIN {print h / m}')" "${ops:-0}"
    done
}

# small_follower: three replicated servers, the third with less room.
small_follower() {
    echo
    echo "a follower with less room: RF=3, -max-memory 4GiB, 4GiB and $SMALL_FOLLOWER"
    # shellcheck source=lib/replicas.sh
    source "$ROOT/lib/replicas.sh"
    trap 'replicas_stop_all; procs_stop' EXIT
    local i mem hwm=()
    for i in 0 1 2; do
        mem=4GiB
        (( i == 2 )) && mem=$SMALL_FOLLOWER
        REPLICA_EXTRA_ARGS="-max-memory $mem $SERVER_ARGS"
        replicas_start "$i"
    done
    replicas_wait_leaders
    "$ROOT/bin/kvsclient" -hosts "$REPLICA_PEERS" -preload=false -theta 0 -records 200000 -valueBytes 4096 \
        -workload YCSB-A -secs "$FOLLOWER_SECS" -batchSize 256 -numClients 64 > "$OUT/kvsclient-follower.txt" 2>&1 ||
        { tail -5 "$OUT/kvsclient-follower.txt" >&2; exit 1; }
    "$ROOT/bin/kvsctl" -hosts "$REPLICA_PEERS" top -once -no-shards > "$OUT/top-follower.txt"
    for i in 0 1 2; do hwm+=("$(( $(status_kb "${REPLICA_PIDS[$i]}" VmHWM) / 1024 ))"); done
    replicas_stop_all
    REPLICA_PIDS=()
    rm -rf "$OUT/data"
    for i in 0 1 2; do
        mem=4GiB
        (( i == 2 )) && mem=$SMALL_FOLLOWER
        printf '  %s -max-memory %s: peak RSS %d MiB, stores at the end %s MiB\n' "${REPLICA_ADDRS[$i]}" "$mem" "${hwm[$i]}" \
            "$(awk -v a="${REPLICA_ADDRS[$i]}" '$1 == a {print $7}' "$OUT/top-follower.txt")"
    done
    echo "  $(grep -E '^throughput' "$OUT/kvsclient-follower.txt" | tail -1), puts refused $(grep -oE 'refused_ops [0-9]+' "$OUT/kvsclient-follower.txt" | awk '{print $2}')"
}

[[ -z $ATTACK_CONNS ]] || attack
[[ -z $SMALL_FOLLOWER ]] || small_follower
