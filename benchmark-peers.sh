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

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "installing redis-server from Debian's packages"
    SUDO=""
    [[ $(id -u) == 0 ]] || SUDO=sudo
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q redis-server
fi

OUT="${OUT:-$ROOT/logs/peers-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
CSV="$OUT/peers.csv"
echo "round,system,workload,ops_per_s,server_cpu_pct,client_cpu_pct,pipeline" > "$CSV"

echo "rounds=$ROUNDS secs=$SECS records=$RECORDS requests=$REQUESTS depths=\"$DEPTHS\" redis_port=$REDIS_PORT port=$PORT"
echo "redis: $(redis-server --version)"
echo "results: $OUT"

REDIS_PID=""
cleanup() {
    if [[ -n $REDIS_PID ]] && kill -0 "$REDIS_PID" 2>/dev/null; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# cpu_ticks PID: user+system clock ticks of a live process.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICKS=$(getconf CLK_TCK)

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
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        > "$OUT/redis-server-$round.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 50); do
        redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    # The keys redis-benchmark -r draws from: key:000000000000 .. with 128-byte values.
    awk -v n="$RECORDS" 'BEGIN { v = ""; for (i = 0; i < 128; i++) v = v "v";
        for (i = 0; i < n; i++) { k = sprintf("key:%012d", i);
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$128\r\n%s\r\n", length(k), k, v } }' |
        redis-cli -p "$REDIS_PORT" --pipe > "$OUT/redis-load-$round.log"
    local test depth best bestdepth rps t0 t1 c0 c1 scpu ccpu out
    for test in get set; do
        best=0; bestdepth=0; scpu=0; ccpu=0
        for depth in $DEPTHS; do
            c0=$(cpu_ticks "$REDIS_PID"); t0=$(date +%s.%N)
            # times prints the shell's and then its children's user/system seconds.
            out=$( { redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -t "$test" -r "$RECORDS" \
                        -d 128 -P "$depth" -n "$REQUESTS" --csv; times; } 2>&1 )
            t1=$(date +%s.%N); c1=$(cpu_ticks "$REDIS_PID")
            rps=$(echo "$out" | awk -F'"' -v t="${test^^}" '$2 == t {printf "%.0f", $4}')
            [[ -n $rps ]] || { echo "redis-benchmark gave no figure:"; echo "$out"; exit 1; } >&2
            local child
            child=$(echo "$out" | tail -1 | awk '{gsub(/[ms]/, " "); print $1*60 + $2 + $3*60 + $4}')
            echo "  ${test^^} -P $depth: $rps ops/s"
            if (( rps > best )); then
                best=$rps; bestdepth=$depth
                read -r scpu ccpu < <(awk -v c0="$c0" -v c1="$c1" -v hz="$TICKS" -v t0="$t0" -v t1="$t1" \
                    -v child="$child" 'BEGIN { w = t1 - t0; printf "%.1f %.1f\n", (c1 - c0) / hz / w * 100, child / w * 100 }')
            fi
        done
        echo "$round,redis,${test^^},$best,$scpu,$ccpu,$bestdepth" >> "$CSV"
    done
    cleanup
    REDIS_PID=""
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
