#!/usr/bin/env bash
# benchmark-resp.sh - batchkv as a Redis server: the real Redis tools
# against it (a scripted redis-cli session, redis-py), then redis-benchmark
# and kvsclient -protocol resp against batchkv and Redis, alternated.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

ROUNDS=3
RECORDS=1000000
REQUESTS=5000000
SECS=15
LONE=100000
PORT=25000
OUT=""

usage() {
    cat <<USAGE
Usage: $0 [options]

1. Checks: a scripted redis-cli session and a redis-py script against one
   batchkv server; each command's answer is compared with Redis's.
2. redis-benchmark -P 256 -c 50 -d 128 -r RECORDS -t get,set against one
   batchkv server (RF=1, memory only) and redis-server (persistence off),
   both holding RECORDS keys of 128 bytes (loaded with redis-cli --pipe
   first), alternated ROUNDS times; medians, ratios, and the CPU % of the
   server and of redis-benchmark (100% = one core).
3. kvsclient YCSB-B (Zipfian 0.99 over RECORDS keys, SECS seconds):
   -protocol resp against batchkv and Redis, and batchkv's own protocol.
4. RF=3 (three servers, fsync on, data under the output directory) with
   the same redis-benchmark run, and its ratio to RF=1.
5. Lone commands: redis-benchmark -c 1 -P 1, p50 and p99, both servers.

Ports used on 127.0.0.1: PORT+1 batchkv, PORT+2 redis, PORT+11..13 RF=3.
Installs redis-server, redis-tools and python3-redis from Debian's
packages if missing. Writes resp.csv and resp.md to logs/resp-<time>/.

Options (defaults in brackets):
  --rounds N     rounds of each redis-benchmark comparison [$ROUNDS]
  --records N    keys [$RECORDS]
  --requests N   requests per redis-benchmark run [$REQUESTS]
  --secs N       seconds of each kvsclient run [$SECS]
  --lone N       requests of each lone-command run [$LONE]
  --port N       base port [$PORT]
  --quick        1 round, 50,000 keys, 500,000 requests, 4 s runs, 10,000 lone
  --out DIR      write results to DIR
  -h, --help     this help
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --records) RECORDS="${2:?}"; shift 2 ;;
        --requests) REQUESTS="${2:?}"; shift 2 ;;
        --secs) SECS="${2:?}"; shift 2 ;;
        --lone) LONE="${2:?}"; shift 2 ;;
        --port) PORT="${2:?}"; shift 2 ;;
        --quick) ROUNDS=1; RECORDS=50000; REQUESTS=500000; SECS=4; LONE=10000; shift ;;
        --out) OUT="${2:?}"; shift 2 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$ROUNDS" "$RECORDS" "$REQUESTS" "$SECS" "$LONE" "$PORT"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $n" >&2; exit 2; }
done

# shellcheck source=lib/redis.sh
source "$ROOT/lib/redis.sh"
redis_install redis-server redis-tools python3-redis

# Debian's python3-redis is in the system's python, which another python3
# first on the PATH may not see.
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3

KVS=$((PORT + 1))
REDIS=$((PORT + 2))
OUT="${OUT:-$ROOT/logs/resp-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
CSV="$OUT/resp.csv"
echo "round,system,test,ops_per_s,server_cpu_pct,generator_cpu_pct,p50_ms,p99_ms" > "$CSV"

echo "rounds=$ROUNDS records=$RECORDS requests=$REQUESTS secs=$SECS lone=$LONE port=$PORT (batchkv $KVS, redis $REDIS, rf3 $((PORT + 11))-$((PORT + 13)))"
echo "redis: $(redis-server --version)"
echo "results: $OUT"

trap procs_stop EXIT
trap 'exit 130' INT TERM

(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient)

# start_kvs: one memory-only batchkv server on KVS; sets KVS_PID.
start_kvs() {
    "$ROOT/bin/kvsserver" -port "$KVS" > "$OUT/kvsserver.log" 2>&1 &
    KVS_PID=$!
    procs_add "$KVS_PID"
    redis_wait "$KVS"
}

# bench ROUND SYSTEM PORT PID TEST ARGS...: one redis-benchmark run, its
# rps, p50, p99, the server's and its own CPU, into the CSV.
bench() {
    local round=$1 system=$2 port=$3 pid=$4 test=$5 scpu gcpu
    shift 5
    redis_bench "$pid" "$port" "$test" "$@"
    scpu=$(printf '%.0f' "$BENCH_SERVER_CPU"); gcpu=$(printf '%.0f' "$BENCH_GEN_CPU")
    printf '  %-8s %-4s %s: %.0f ops/s p50 %s ms p99 %s ms, server cpu %s%%, redis-benchmark cpu %s%%\n' \
        "$system" "${test^^}" "$*" "$BENCH_RPS" "$BENCH_P50" "$BENCH_P99" "$scpu" "$gcpu"
    echo "$round,$system,${test^^}${BENCH_TAG:-},${BENCH_RPS%.*},$scpu,$gcpu,$BENCH_P50,$BENCH_P99" >> "$CSV"
}

echo
echo "== 1. redis-cli session and redis-py against batchkv"
start_kvs
CHECKS=ok
"$ROOT/lib/resp-session.sh" "$KVS" > "$OUT/redis-cli-session.txt" 2>&1 || CHECKS=FAILED
cat "$OUT/redis-cli-session.txt"
"$PY" "$ROOT/lib/resp_check.py" "$KVS" > "$OUT/redis-py.txt" 2>&1 || CHECKS=FAILED
cat "$OUT/redis-py.txt"
procs_stop

echo
echo "== 2. redis-benchmark -P 256 -c 50 -d 128 -r $RECORDS, batchkv (RF=1) and redis, alternated"
start_kvs
redis_start "$REDIS" "$OUT/redis-server.log"
echo "  loaded batchkv: $(redis_load "$KVS" "$RECORDS" | tail -1)"
echo "  loaded redis:   $(redis_load "$REDIS" "$RECORDS" | tail -1)"
PIPE=(-P 256 -c 50 -d 128 -r "$RECORDS" -n "$REQUESTS")
for round in $(seq "$ROUNDS"); do
    for test in get set; do
        bench "$round" batchkv "$KVS" "$KVS_PID" "$test" "${PIPE[@]}"
        bench "$round" redis "$REDIS" "$REDIS_PID" "$test" "${PIPE[@]}"
    done
done

echo
echo "== 5. lone commands: redis-benchmark -c 1 -P 1"
BENCH_TAG=" lone"
for test in get set; do
    bench 1 batchkv "$KVS" "$KVS_PID" "$test" -c 1 -P 1 -d 128 -r "$RECORDS" -n "$LONE"
    bench 1 redis "$REDIS" "$REDIS_PID" "$test" -c 1 -P 1 -d 128 -r "$RECORDS" -n "$LONE"
done
BENCH_TAG=""

echo
echo "== 3. kvsclient YCSB-B ($SECS s): over RESP to batchkv and redis, and batchkv's own protocol"
ycsb() {
    local system=$1 port=$2 proto=$3 log="$OUT/ycsb-$1-$3.txt" ops
    "$ROOT/bin/kvsclient" -protocol "$proto" -hosts "127.0.0.1:$port" -workload YCSB-B -records "$RECORDS" \
        -secs "$SECS" > "$log" 2>&1 || { tail -5 "$log" >&2; echo "kvsclient failed; see $log" >&2; exit 1; }
    ops=$(awk '/^throughput /{print $2}' "$log")
    echo "  $system over $proto: $ops ops/s (client's own count)"
    echo "1,$system,YCSB-B $proto,$ops,,,," >> "$CSV"
}
ycsb redis "$REDIS" resp
ycsb batchkv "$KVS" resp
ycsb batchkv "$KVS" batchkv
procs_stop

echo
echo "== 4. RF=3 (three servers, fsync on), redis-benchmark -P 256 -c 50 against one of them"
PEERS="127.0.0.1:$((PORT + 11)),127.0.0.1:$((PORT + 12)),127.0.0.1:$((PORT + 13))"
RF3_PID=""
for i in 11 12 13; do
    "$ROOT/bin/kvsserver" -port $((PORT + i)) -peers "$PEERS" -rf 3 -data-dir "$OUT/rf3-data/$i" \
        > "$OUT/rf3-server-$i.log" 2>&1 &
    procs_add "$!"
    [[ -n $RF3_PID ]] || RF3_PID=$!
done
redis_wait $((PORT + 11))
for _ in $(seq 100); do
    [[ $(redis-cli -p $((PORT + 11)) set rf3probe ok 2>/dev/null) == OK ]] && break
    sleep 0.2
done
echo "  loaded rf3: $(redis_load $((PORT + 11)) "$RECORDS" | tail -1)"
BENCH_TAG=" rf3"
for test in get set; do
    bench 1 batchkv-rf3 $((PORT + 11)) "$RF3_PID" "$test" "${PIPE[@]}"
done
BENCH_TAG=""
procs_stop

# The table: medians over rounds, and ratios.
awk -F, 'NR > 1 { k = $2 "," $3; v[k] = v[k] " " $4; s[k] = s[k] " " $5; g[k] = g[k] " " $6;
        p50[k] = $7; p99[k] = $8; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
    function median(list,   a, m, i, j, t) {
        m = split(list, a, " ");
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return a[int((m + 1) / 2)] }
    END {
        print "| system | test | median ops/s | server CPU % | generator CPU % | p50 ms | p99 ms |";
        print "|---|---|---:|---:|---:|---:|---:|";
        for (i = 1; i <= n; i++) { k = order[i]; split(k, f, ",");
            printf "| %s | %s | %d | %s | %s | %s | %s |\n", f[1], f[2], median(v[k]), median(s[k]), median(g[k]), p50[k], p99[k] }
        print "";
        printf "batchkv / redis, GET -P 256: %.2fx\n", median(v["batchkv,GET"]) / median(v["redis,GET"]);
        printf "batchkv / redis, SET -P 256: %.2fx\n", median(v["batchkv,SET"]) / median(v["redis,SET"]);
        printf "RF=3 / RF=1, GET -P 256: %.2f\n", median(v["batchkv-rf3,GET rf3"]) / median(v["batchkv,GET"]);
        printf "RF=3 / RF=1, SET -P 256: %.2f\n", median(v["batchkv-rf3,SET rf3"]) / median(v["batchkv,SET"]);
        printf "YCSB-B over RESP, batchkv / redis: %.2fx\n", median(v["batchkv,YCSB-B resp"]) / median(v["redis,YCSB-B resp"]);
        printf "YCSB-B batchkv, own protocol / RESP: %.2fx\n", median(v["batchkv,YCSB-B batchkv"]) / median(v["batchkv,YCSB-B resp"]);
    }' "$CSV" > "$OUT/resp.md"
echo "redis-cli and redis-py checks: $CHECKS" >> "$OUT/resp.md"
echo
cat "$OUT/resp.md"
echo
echo "csv: $CSV"
[[ $CHECKS == ok ]]
