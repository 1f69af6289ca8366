#!/usr/bin/env bash
# benchmark-latency.sh - the latency of a lone op (one caller, one op at a
# time, no pipelining) on one batchkv server against Redis, alternating,
# with the ratios.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

ROUNDS=3
OPS=20000
BLOCK=200
PORT=29080
REDIS_PORT=29379
OUT=""
SERVER_CPU=""
CLIENT_CPU=""

usage() {
    cat <<USAGE
Usage: $0 [options]

Runs ROUNDS rounds, each with a redis-server (persistence off, 127.0.0.1)
holding OPS keys with 128-byte values and one kvsserver (RF=1, memory
only) beside it, of:
  (a) redis-benchmark -c 1 -P 1 -t set,get -d 128 over those keys: one
      connection, one command at a time;
  (b) kvsclient -sync-ops OPS: one goroutine, OPS puts then OPS gets of
      128-byte values, each op sent two ways in turn, op by op: as a
      batch of one op (client Do) and through the client's Put and Get
      (its auto-batcher). Like redis-benchmark, the program talks to its
      server alone;
  (c) last, kvsclient -sync-ops OPS -sync-redis -sync-block BLOCK: the
      same, each op also sent as one command to that Redis from the same
      Go program, the three ways taking turns of BLOCK ops in a row.
      Interleaved, the three see the same moment's noise; in turns of
      some hundreds each server runs hot through its turn, as it does
      alone with its client, where op by op (--block 1) each sleeps while
      the others answer and wakes cold.
  (d) redis-benchmark as in (a), against the batchkv server's own port,
      which speaks RESP too, over the same keys loaded the same way: one
      client for both servers, whose p50 and p99 have the same buckets.
(a) comes first in odd rounds and (b) in even ones, so that a machine
that grows slower or quicker through a round favours neither. A small VM
has quick and slow spells of seconds; so besides the ratio of the
medians over the rounds, the script gives the (lower) median, lowest and
highest of each round's own ratio (batchkv's figure over
redis-benchmark's in that round), which a spell moves less.
redis-benchmark gives a percentile as the top of its histogram's bucket,
8 µs wide below 128 µs (Redis 7.0): its p50 of 23 is a median between
16 and 23 µs.
With --cpus, every server (redis-server, kvsserver) runs on one CPU and
every client (redis-benchmark, kvsclient) on another, or the same: on a
small VM a round trip costs about twice as much when the scheduler puts
client and server on different cores as on one, and it moves between the
two within a run, so pinning both systems the same way compares them at
one placement.
Prints each round's p50 and p99 and then the medians over the rounds with
the ratios batchkv / Redis (below 1 is faster than Redis) and Get / Do,
the ratios of (d) to (a), and the CPU time each client and server spent
per op in (a) and (b) (from /proc, counted in clock ticks, 10 ms where
CLK_TCK is 100; a client's includes its start; kvsclient loads its keys
with lone puts, which count as ops), and draws each round's p50 and p99 of
redis-benchmark and of Do (latency-p50.png, latency-p99.png). A median
over an even number of rounds is the lower of the two middle ones.
Installs Redis from Debian's packages if missing.

Options (defaults in brackets):
  --rounds N        rounds of each system [$ROUNDS]
  --ops N           ops of each kind per run [$OPS]
  --port N          port of kvsserver on 127.0.0.1 [$PORT]
  --redis-port N    port of redis-server on 127.0.0.1 [$REDIS_PORT]
  --block N         ops in a row each way takes in (c) [$BLOCK]
  --cpus S,C        run the servers on CPU S and the clients on CPU C
                    (taskset; S and C may be equal) [not pinned]
  --quick           1 round of 2,000 ops
  --out DIR         write results to DIR [logs/latency-<timestamp>]
  -h, --help        this help
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --ops) OPS="${2:?}"; shift 2 ;;
        --port) PORT="${2:?}"; shift 2 ;;
        --redis-port) REDIS_PORT="${2:?}"; shift 2 ;;
        --block) BLOCK="${2:?}"; shift 2 ;;
        --cpus)
            [[ ${2:-} =~ ^([0-9]+),([0-9]+)$ ]] || { echo "--cpus wants S,C, two CPU numbers (see --help)" >&2; exit 2; }
            SERVER_CPU=${BASH_REMATCH[1]}; CLIENT_CPU=${BASH_REMATCH[2]}; shift 2 ;;
        --quick) ROUNDS=1; OPS=2000; shift ;;
        --out) OUT="${2:?}"; shift 2 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$ROUNDS" "$OPS" "$PORT" "$REDIS_PORT" "$BLOCK"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $n (see --help)" >&2; exit 2; }
done
(( BLOCK <= OPS )) || BLOCK=$OPS

if [[ -n $SERVER_CPU ]]; then
    command -v taskset >/dev/null || { echo "--cpus needs taskset (Debian's util-linux)" >&2; exit 2; }
    for cpu in "$SERVER_CPU" "$CLIENT_CPU"; do
        taskset -c "$cpu" true 2>/dev/null || { echo "--cpus: no CPU $cpu here" >&2; exit 2; }
    done
fi

# ON_SERVER_CPU and ON_CLIENT_CPU prefix a command to run it on its CPU
# (taskset, which execs it: a server started in the background keeps the
# PID procs_stop stops).
ON_SERVER_CPU=()
ON_CLIENT_CPU=()
if [[ -n $SERVER_CPU ]]; then
    ON_SERVER_CPU=(taskset -c "$SERVER_CPU")
    ON_CLIENT_CPU=(taskset -c "$CLIENT_CPU")
fi

# shellcheck source=lib/redis.sh
source "$ROOT/lib/redis.sh"
redis_install redis-server

OUT="${OUT:-$ROOT/logs/latency-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
CSV="$OUT/latency.csv"
echo "round,system,op,p50_us,p99_us" > "$CSV"
CPU_CSV="$OUT/cpu.csv"
echo "round,system,client_us_per_op,server_us_per_op" > "$CPU_CSV"
echo "rounds=$ROUNDS ops=$OPS port=$PORT redis_port=$REDIS_PORT block=$BLOCK value_bytes=128 cpus=${SERVER_CPU:-any},${CLIENT_CPU:-any}"
echo "redis: $(redis-server --version)"
echo "results: $OUT"

trap procs_stop EXIT
trap 'exit 130' INT TERM

(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient ./cmd/kvsplot)

# redis_up ROUND: a Redis holding the keys redis-benchmark -r OPS reads.
redis_up() {
    local round=$1
    port_free "$REDIS_PORT"
    redis_start "$REDIS_PORT" "$OUT/redis-server-$round.log"
    [[ -z $SERVER_CPU ]] || taskset -a -p -c "$SERVER_CPU" "$REDIS_PID" > /dev/null
    # The keys first, so that every GET finds a 128-byte value.
    redis_load "$REDIS_PORT" "$OPS" > "$OUT/redis-load-$round.log"
}

# CPU time, in clock ticks (CLOCK_TICKS and cpu_ticks, lib/procs.sh). A
# client leg's comes from this shell's cutime and cstime, which grow by
# the CPU time of each child it reaps: between the two reads nothing is
# forked but the client (a command substitution there would count too).
# client_ticks sets TICKS to that sum, read with builtins only.
client_ticks() {
    local line f
    read -r line < "/proc/$$/stat"
    read -r -a f <<< "${line##*) }" # field 3 (the state) on
    TICKS=$(( f[13] + f[14] ))      # fields 16 and 17
}

# cpu_start SERVER_PID: notes the client's and SERVER_PID's ticks
# (CPU_CLIENT0, CPU_SERVER0) before a client leg: the server's first, as
# reading them forks.
cpu_start() {
    CPU_SERVER0=$(cpu_ticks "$1")
    client_ticks
    CPU_CLIENT0=$TICKS
}

# cpu_record SERVER_PID ROUND SYSTEM OPS: after the leg, appends the
# client's and the server's CPU time since cpu_start, in µs per op over
# OPS ops, to the CPU CSV: the client's read first, before anything forks.
cpu_record() {
    client_ticks
    local c=$(( TICKS - CPU_CLIENT0 )) s
    s=$(( $(cpu_ticks "$1") - CPU_SERVER0 ))
    awk -v r="$2" -v sys="$3" -v n="$4" -v c="$c" -v s="$s" -v hz="$CLOCK_TICKS" \
        'BEGIN { printf "%s,%s,%.1f,%.1f\n", r, sys, c * 1e6 / hz / n, s * 1e6 / hz / n }' >> "$CPU_CSV"
}

# redis_round ROUND: Redis's p50 and p99 of lone SETs and GETs under
# redis-benchmark.
redis_round() {
    local round=$1
    cpu_start "$REDIS_PID"
    bench_run "$REDIS_PORT" "$OUT/redis-benchmark-$round.csv" "$round" redis
    cpu_record "$REDIS_PID" "$round" redis $(( 2 * OPS ))
}

# bench_run PORT FILE ROUND SYSTEM: redis-benchmark's lone SETs and GETs
# against PORT, its CSV kept in FILE and its p50 and p99 added to the CSV
# as SYSTEM's.
bench_run() {
    "${ON_CLIENT_CPU[@]}" redis-benchmark -p "$1" -c 1 -P 1 -t set,get -n "$OPS" -r "$OPS" -d 128 --csv > "$2"
    # "SET","rps","avg","min","p50","p95","p99","max" in milliseconds.
    awk -F, -v r="$3" -v sys="$4" 'NR > 1 { gsub(/"/, ""); t = tolower($1); if (t == "set") t = "put";
        printf "%s,%s,%s,%.1f,%.1f\n", r, sys, t, $5 * 1000, $7 * 1000 }' "$2" >> "$CSV"
}

# sync_run ROUND SUFFIX ARGS...: kvsclient -sync-ops ARGS against the
# server of batchkv_round; its legs go to the CSV as batchkv (Do),
# batchkv-auto (Put/Get) and redis-go, each name followed by SUFFIX.
sync_run() {
    local round=$1 suffix=$2 out="$OUT/kvsclient-$1$2.txt"
    shift 2
    [[ -n $suffix ]] || cpu_start "$KVS_PID"
    "${ON_CLIENT_CPU[@]}" "$ROOT/bin/kvsclient" -hosts "127.0.0.1:$PORT" -sync-ops "$OPS" -valueBytes 128 "$@" \
        > "$out" 2>&1 || { tail -5 "$out" >&2; exit 1; }
    # Alone: OPS lone puts that load the keys, then four legs of OPS lone
    # ops (Do and Put/Get, puts and gets).
    if [[ -z $suffix ]]; then
        cpu_record "$KVS_PID" "$round" batchkv $(( 5 * OPS ))
    fi
    # "sync put via Do n N p50 57.1µs p90 .. p99 80µs ..": Go durations.
    awk -v r="$round" -v sfx="$suffix" '
        function us(d) {
            if (d ~ /ns$/) return d / 1000
            if (d ~ /µs$/) return substr(d, 1, length(d) - 2) + 0
            if (d ~ /ms$/) return substr(d, 1, length(d) - 2) * 1000
            return substr(d, 1, length(d) - 1) * 1000000
        }
        $1 == "sync" { name = ($4 == "Do") ? "batchkv" : ($4 == "redis") ? "redis-go" : "batchkv-auto"
            printf "%s,%s%s,%s,%.1f,%.1f\n", r, name, sfx, $2, us($8), us($12) }' "$out" >> "$CSV"
}

# kvsserver_up ROUND: the batchkv server of the round.
kvsserver_up() {
    local round=$1
    port_free "$PORT"
    "${ON_SERVER_CPU[@]}" "$ROOT/bin/kvsserver" -host 127.0.0.1 -port "$PORT" > "$OUT/kvsserver-$round.log" 2>&1 &
    KVS_PID=$!
    procs_add "$KVS_PID"
    wait_port "$PORT"
}

for round in $(seq "$ROUNDS"); do
    redis_up "$round"
    kvsserver_up "$round"
    if (( round % 2 == 1 )); then
        echo "round $round: redis-benchmark, then kvsclient -sync-ops alone, then interleaved with Redis"
        redis_round "$round"
        sync_run "$round" ""
    else
        echo "round $round: kvsclient -sync-ops alone, then redis-benchmark, then interleaved with Redis"
        sync_run "$round" ""
        redis_round "$round"
    fi
    sync_run "$round" "-il" -sync-redis "127.0.0.1:$REDIS_PORT" -sync-block "$BLOCK"
    redis_load "$PORT" "$OPS" > "$OUT/batchkv-load-$round.log"
    bench_run "$PORT" "$OUT/redis-benchmark-batchkv-$round.csv" "$round" batchkv-rb
    procs_stop
done

echo
echo "per round (µs):"
column -t -s, "$CSV"
echo
echo "CPU time per op, per round (µs):"
column -t -s, "$CPU_CSV"

# lower_median: the median of the numbers on stdin, one a line;
# median_range: that, then "(lowest-highest)".
lower_median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "nan"}'; }
median_range() { sort -g | awk '{v[NR] = $1} END {if (NR) printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR]; else print "nan"}'; }

# median SYSTEM OP FIELD: the median over the rounds (FIELD 4 = p50, 5 = p99).
median() {
    awk -F, -v s="$1" -v o="$2" -v f="$3" '$2 == s && $3 == o {print $f}' "$CSV" | lower_median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'; }

# round_ratios SYSTEM: from "round,system,figure" lines on stdin, each
# round's SYSTEM figure over Redis's in the same round, one a line.
round_ratios() {
    awk -F, -v s="$1" '
        $2 == "redis" { r[$1] = $3 }
        $2 == s { b[$1] = $3 }
        END { for (k in b) if (r[k] > 0) printf "%.2f\n", b[k] / r[k] }'
}

# paired SYSTEM OP FIELD: each round's SYSTEM figure over redis-benchmark's
# in the same round, as "median (lowest-highest)" over the rounds.
paired() {
    awk -F, -v o="$2" -v f="$3" '$3 == o { print $1 "," $2 "," $f }' "$CSV" | round_ratios "$1" | median_range
}

# cpu_median SYSTEM FIELD: the median over the rounds of SYSTEM's FIELD
# of the CPU CSV (3: the client's, 4: the server's, 0: their sum).
cpu_median() {
    awk -F, -v s="$1" -v f="$2" '$2 == s {printf "%.1f\n", f ? $f : $3 + $4}' "$CPU_CSV" | lower_median
}

# cpu_row SYSTEM NAME: SYSTEM's row of the CPU table: the medians of the
# client's, the server's and their sum, and that sum over Redis's in the
# same round, as paired gives it.
cpu_row() {
    local ratio="(the reference)"
    if [[ $1 != redis ]]; then
        ratio=$(awk -F, '{ print $1 "," $2 "," $3 + $4 }' "$CPU_CSV" | round_ratios "$1" | median_range)
    fi
    echo "| $2 | $(cpu_median "$1" 3) | $(cpu_median "$1" 4) | $(cpu_median "$1" 0) | $ratio |"
}

{
    echo "batchkv: kvsclient -sync-ops alone with its server, as redis-benchmark is with Redis; interleaved: the same Go program sends its ops to batchkv (Do, then Put/Get) and to Redis in turns of $BLOCK"
    echo
    echo "| op | redis-benchmark p50 / p99 (µs) | batchkv Do | Put/Get | Do / redis-benchmark p50, p99 | Put/Get / redis-benchmark p50, p99 | Put/Get / Do p50 | interleaved: Redis | Do | Do / Redis p50, p99 |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for op in get put; do
        r50=$(median redis "$op" 4); r99=$(median redis "$op" 5)
        d50=$(median batchkv "$op" 4); d99=$(median batchkv "$op" 5)
        a50=$(median batchkv-auto "$op" 4); a99=$(median batchkv-auto "$op" 5)
        g50=$(median redis-go-il "$op" 4); g99=$(median redis-go-il "$op" 5)
        i50=$(median batchkv-il "$op" 4); i99=$(median batchkv-il "$op" 5)
        echo "| $op | $r50 / $r99 | $d50 / $d99 | $a50 / $a99 | $(ratio "$d50" "$r50"), $(ratio "$d99" "$r99") | $(ratio "$a50" "$r50"), $(ratio "$a99" "$r99") | $(ratio "$a50" "$d50") | $g50 / $g99 | $i50 / $i99 | $(ratio "$i50" "$g50"), $(ratio "$i99" "$g99") |"
    done
    echo
    echo "Each round's own ratio to redis-benchmark in that round: median (lowest-highest) over the rounds"
    echo
    echo "| op | Do p50 | Do p99 | Put/Get p50 | Put/Get p99 |"
    echo "|---|---|---|---|---|"
    for op in get put; do
        echo "| $op | $(paired batchkv "$op" 4) | $(paired batchkv "$op" 5) | $(paired batchkv-auto "$op" 4) | $(paired batchkv-auto "$op" 5) |"
    done
    echo
    echo "One client for both servers: redis-benchmark -c 1 -P 1 against batchkv's port (RESP) and against Redis; medians over the rounds, and each round's own ratio: median (lowest-highest)"
    echo
    echo "| op | Redis p50 / p99 (µs) | batchkv p50 / p99 | batchkv / Redis p50 | p99 |"
    echo "|---|---|---|---|---|"
    for op in get put; do
        echo "| $op | $(median redis "$op" 4) / $(median redis "$op" 5) | $(median batchkv-rb "$op" 4) / $(median batchkv-rb "$op" 5) | $(paired batchkv-rb "$op" 4) | $(paired batchkv-rb "$op" 5) |"
    done
    echo
    echo "CPU time per lone op (µs), median over the rounds; a client's includes its start; kvsclient's ops include the lone puts that load its keys"
    echo
    echo "| system | client | server | both | both / Redis's in the same round: median (range) |"
    echo "|---|---|---|---|---|"
    cpu_row redis "Redis (redis-benchmark, redis-server)"
    cpu_row batchkv "batchkv (kvsclient, kvsserver)"
} | tee "$OUT/latency.md"
echo "medians over $ROUNDS rounds; written to $OUT/latency.md"
# Each round's p50 and p99 of both systems: the spells move both.
"$ROOT/bin/kvsplot" latency -out "$OUT/latency" "$CSV"
