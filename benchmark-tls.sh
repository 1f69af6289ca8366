#!/usr/bin/env bash
# benchmark-tls.sh - the cost of TLS: the standard run with and without
# mutual TLS, alternated (A B A B) in one session, at RF=1 (1 server + 1
# client) and RF=3 (3 servers + 1 client).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROUNDS=2
SECS=20
PORT=8080

usage() {
    cat <<USAGE
usage: $0 [--rounds N] [--secs S] [--port P] [-h|--help]

Runs ./run-cluster.sh alternately without and with --tls, ROUNDS times
each, for the standard run (1 server + 1 client, YCSB-B) and the
replicated one (3 servers + 1 client, -rf 3), and prints one row per run:
total ops/s, the servers' CPU seconds per million ops (summed) and the
client's, then the TLS/plaintext ratio of the medians.

Defaults: --rounds $ROUNDS --secs $SECS --port $PORT
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --rounds) ROUNDS="${2:?}"; shift 2 ;;
        --secs) SECS="${2:?}"; shift 2 ;;
        --port) PORT="${2:?}"; shift 2 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
echo "rounds=$ROUNDS secs=$SECS port=$PORT"
(cd "$ROOT" && go build -o bin/ ./cmd/...)

OUT="$ROOT/logs/tls-$(date +%Y%m%d-%H%M%S).csv"
mkdir -p "$(dirname "$OUT")"
echo "shape,tls,round,ops_per_s,server_cpu_s_per_mops,client_cpu_s_per_mops,log" > "$OUT"

# one SHAPE TLS ROUND SERVERS SERVER_ARGS: a run, appended to OUT.
one() {
    local shape=$1 tls=$2 round=$3 servers=$4 server_args=$5 flags=()
    if [[ $tls == on ]]; then flags=(--tls); fi
    "$ROOT/run-cluster.sh" --no-build --port "$PORT" "${flags[@]+"${flags[@]}"}" "$servers" 1 "$server_args" "-secs $SECS" > /dev/null
    local dir total server client
    dir=$(readlink -f "$ROOT/logs/latest")
    total=$(awk '/^total/ {print $2}' "$dir/report.txt")
    server=$(awk '/cpu_s\/Mops/ {for (i = 1; i < NF; i++) if ($i == "cpu_s/Mops") s += $(i + 1)} END {printf "%.3f", s}' "$dir/report.txt")
    client=$(awk '/^client cpu_s\/Mops/ {print $3}' "$dir"/client-*.log | head -n 1)
    echo "$shape,$tls,$round,$total,$server,$client,$dir" | tee -a "$OUT"
}

for ((r = 1; r <= ROUNDS; r++)); do
    one rf1 off "$r" 1 ""
    one rf1 on "$r" 1 ""
    one rf3 off "$r" 3 "-rf 3"
    one rf3 on "$r" 3 "-rf 3"
done

echo "results: $OUT"
# median SHAPE TLS COLUMN: the median of a column over the runs of a shape.
median() {
    awk -F, -v s="$1" -v t="$2" -v c="$3" '$1 == s && $2 == t {print $c}' "$OUT" | sort -g |
        awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
for shape in rf1 rf3; do
    off=$(median "$shape" off 4) on=$(median "$shape" on 4)
    printf '%s: median %.0f ops/s with TLS, %.0f without (ratio %.2f); CPU-s per million ops, servers %s -> %s, client %s -> %s\n' \
        "$shape" "$on" "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN {print a / b}')" \
        "$(median "$shape" off 5)" "$(median "$shape" on 5)" "$(median "$shape" off 6)" "$(median "$shape" on 6)"
done
