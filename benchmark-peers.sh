#!/usr/bin/env bash
# benchmark-peers.sh - our standard run against Redis with pipelining, on
# this machine, alternating, and a table of the medians.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

ROUNDS=3
SECS=30
RECORDS=1000000
REQUESTS=5000000
DEPTHS="64 256 1024"
REDIS_PORT=16379
PORT=8080
OUT=""
UNIFORM=1

usage() {
    cat <<USAGE
Usage: $0 [options]

Runs, alternately and ROUNDS times each, (a) our standard run (1 server +
1 client on loopback, YCSB-B, Zipfian 0.99, run through run-cluster.sh) and
(b) redis-server (persistence off, 127.0.0.1) holding RECORDS keys with
128-byte values, driven by redis-benchmark with random keys over them at
each pipelining depth in DEPTHS, for GET and for SET; the best depth counts.
Also runs ours on YCSB-C with uniform keys (-theta 0), the workload closest
to redis-benchmark's GET. Installs Redis from Debian's packages if missing.

Prints a table (system, workload, median ops/s, CPU % of the server and of
the load generator, our YCSB-B over the row) and writes peers.csv and
peers.md to logs/peers-<timestamp>/.

Options (defaults in brackets):
  --rounds N        rounds of each system [$ROUNDS]
  --secs N          seconds of each run of ours [$SECS]
  --records N       keys [$RECORDS]
  --requests N      requests per redis-benchmark run [$REQUESTS]
  --depths "A B"    redis-benchmark pipelining depths to try [$DEPTHS]
  --redis-port N    port for redis-server on 127.0.0.1 [$REDIS_PORT]
  --port N          first port of our server [$PORT]
  --no-uniform      skip our YCSB-C uniform run
  --quick           1 round, 3 s runs, 20,000 keys, 200,000 requests
  --out DIR         write results to DIR
  -h, --help        this help
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --secs) SECS="${2:?}"; shift 2 ;;
        --records) RECORDS="${2:?}"; shift 2 ;;
        --requests) REQUESTS="${2:?}"; shift 2 ;;
        --depths) DEPTHS="${2:?}"; shift 2 ;;
        --redis-port) REDIS_PORT="${2:?}"; shift 2 ;;
        --port) PORT="${2:?}"; shift 2 ;;
        --no-uniform) UNIFORM=0; shift ;;
        --quick) ROUNDS=1; SECS=3; RECORDS=20000; REQUESTS=200000; shift ;;
        --out) OUT="${2:?}"; shift 2 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$ROUNDS" "$SECS" "$RECORDS" "$REQUESTS" "$REDIS_PORT" "$PORT"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $n" >&2; exit 2; }
done

# shellcheck source=lib/redis.sh
source "$ROOT/lib/redis.sh"
redis_install redis-server

OUT="${OUT:-$ROOT/logs/peers-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
CSV="$OUT/peers.csv"
echo "round,system,workload,ops_per_s,server_cpu_pct,client_cpu_pct,pipeline" > "$CSV"

echo "rounds=$ROUNDS secs=$SECS records=$RECORDS requests=$REQUESTS depths=\"$DEPTHS\" redis_port=$REDIS_PORT port=$PORT"
echo "redis: $(redis-server --version)"
echo "results: $OUT"

trap procs_stop EXIT
trap 'exit 130' INT TERM

(cd "$ROOT" && go build -o bin/ ./cmd/...)

# ours WORKLOAD EXTRA_CLIENT_ARGS ROUND: one run-cluster.sh run.
ours() {
    local workload=$1 extra=$2 round=$3 log="$OUT/ours-$1-$3.txt"
    echo "round $round: ours $workload $extra"
    # shellcheck disable=SC2086 # extra holds several flags
    "$ROOT/run-cluster.sh" --no-build --port "$PORT" 1 1 "" \
        "-workload $workload -secs $SECS -records $RECORDS $extra" > "$log" 2>&1 || {
        tail -5 "$log" >&2; echo "our run failed; see $log" >&2; exit 1; }
    local dir ops scpu ccpu
    dir=$(sed -n 's/^logs: *//p' "$log")
    ops=$(awk '/^total /{print $2}' "$log")
    scpu=$(grep -oE 'cpu% [0-9.]+' "$dir/report.txt" | head -1 | awk '{print $2}')
    # The client's per-second CPU: the median of its samples, without the
    # first 3 (preload and ramp-up) when there are enough.
    ccpu=$(awk '/^util cpu%/{v[++n] = $3} END{for (i = (n > 6 ? 4 : 1); i <= n; i++) print v[i]}' \
        "$dir"/client-*.log | sort -n |
        awk '{v[NR]=$1} END{if (NR) print v[int((NR+1)/2)]; else print 0}')
    echo "  $ops ops/s, server cpu $scpu%, client cpu $ccpu%"
    echo "$round,batchkv,$workload${extra:+ $extra},$ops,$scpu,$ccpu," >> "$CSV"
}

# redis_round ROUND: start redis, load the keys, run GET and SET at each depth.
redis_round() {
    local round=$1
    echo "round $round: redis"
    redis_start "$REDIS_PORT" "$OUT/redis-server-$round.log"
    redis_load "$REDIS_PORT" "$RECORDS" > "$OUT/redis-load-$round.log"
    local test depth best bestdepth rps scpu ccpu
    for test in get set; do
        best=0; bestdepth=0; scpu=0; ccpu=0
        for depth in $DEPTHS; do
            redis_bench "$REDIS_PID" "$REDIS_PORT" "$test" -r "$RECORDS" -d 128 -P "$depth" -n "$REQUESTS"
            rps=$(printf '%.0f' "$BENCH_RPS")
            echo "  ${test^^} -P $depth: $rps ops/s"
            if (( rps > best )); then
                best=$rps; bestdepth=$depth
                scpu=$(printf '%.1f' "$BENCH_SERVER_CPU"); ccpu=$(printf '%.1f' "$BENCH_GEN_CPU")
            fi
        done
        echo "$round,redis,${test^^},$best,$scpu,$ccpu,$bestdepth" >> "$CSV"
    done
    procs_stop
}

for round in $(seq "$ROUNDS"); do
    ours YCSB-B "" "$round"
    redis_round "$round"
    if (( UNIFORM )); then
        ours YCSB-C "-theta 0" "$round"
    fi
done

# The table: medians over rounds of each (system, workload).
awk -F, 'NR > 1 { key = $2 "," $3; ops[key] = ops[key] " " $4; s[key] = s[key] " " $5;
        c[key] = c[key] " " $6; if (index(p[key] "/", "/" $7 "/") == 0) p[key] = p[key] "/" $7; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    function median(list,   v, m, i, j, t) {
        m = split(list, v, " ");
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
        return v[int((m + 1) / 2)] }
    END {
        ref = median(ops["batchkv,YCSB-B"]);
        print "| system | workload | median ops/s | server CPU % | client CPU % | YCSB-B ours / this |";
        print "|---|---|---:|---:|---:|---:|";
        for (i = 1; i <= n; i++) { k = order[i]; split(k, f, ",");
            w = f[2]; if (f[1] == "redis") w = w " (best -P: " substr(p[k], 2) ")";
            m = median(ops[k]);
            printf "| %s | %s | %d | %.0f | %.0f | %.2fx |\n", f[1], w, m, median(s[k]), median(c[k]), ref / m }
    }' "$CSV" > "$OUT/peers.md"
echo
cat "$OUT/peers.md"
echo
echo "csv: $CSV"
