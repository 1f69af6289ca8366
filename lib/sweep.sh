#!/usr/bin/env bash
# lib/sweep.sh KIND [options] - the sweeps behind benchmark-batch.sh
# (KIND batch), benchmark-clients.sh (clients) and benchmark-scaling.sh
# (scaling). Each point is one run of run-cluster.sh, repeated; every run
# adds a row to a CSV (bin/kvsplot row) and the figures are drawn at the end.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIND="${1:?usage: lib/sweep.sh batch|clients|scaling [options]}"
shift

case "$KIND" in
    batch)
        SCRIPT=benchmark-batch.sh
        WHAT="batch size (ops per batch) at a fixed number of goroutines"
        VALUES="1 8 64 512 1024 4096 8192 16384"; QUICK_VALUES="64 8192" ;;
    clients)
        SCRIPT=benchmark-clients.sh
        WHAT="goroutines per client at a fixed batch size"
        VALUES="1 2 4 8 16 32 64 128 256"; QUICK_VALUES="1 16" ;;
    scaling)
        SCRIPT=benchmark-scaling.sh
        WHAT="servers x clients (on 127.0.0.x when there is no cluster)"
        VALUES="1x1 2x2 4x4"; QUICK_VALUES="1x1 2x2" ;;
    *) echo "unknown sweep $KIND: want batch, clients or scaling" >&2; exit 2 ;;
esac

GOROUTINES=128
BATCH=8192
SERVERS=1
CLIENTS=1
REPEATS=3
SECS=20
RECORDS=1000000
SERVER_ARGS=""
CLIENT_ARGS=""
OUT=""
QUICK=0
CLUSTER_ARGS=()

usage() {
    cat <<USAGE
Usage: ./$SCRIPT [options]

Sweeps $WHAT.
Each point runs ./run-cluster.sh (locally, or on a cluster as run-cluster.sh
finds one) REPEATS times. Every run adds one row to PREFIX.csv: its
configuration, each server's median ops/s, the total, and each node's median
CPU %, RSS and network MiB/s, and the worst client's batch latency
percentiles. At the end the figures are drawn with bin/kvsplot.

Options (defaults in brackets):
  --values "A B ..."  the points [$VALUES]
USAGE
    case "$KIND" in
        batch) echo "  --goroutines N      goroutines per client [$GOROUTINES]" ;;
        clients) echo "  --batch N           ops per batch [$BATCH]" ;;
    esac
    if [[ $KIND != scaling ]]; then
        echo "  --servers N         servers [$SERVERS]"
        echo "  --clients N         load clients [$CLIENTS]"
    else
        echo "  --goroutines N      goroutines per client [$GOROUTINES]"
        echo "  --batch N           ops per batch [$BATCH]"
    fi
    cat <<USAGE
  --repeats N         runs per point [$REPEATS]
  --secs N            seconds of load per run [$SECS]
  --records N         keys [$RECORDS]
  --server-args "..." extra kvsserver flags
  --client-args "..." extra kvsclient flags
  --out PREFIX        where the CSV and figures go [plots/$KIND]
  --hosts-file FILE   run on these SSH hosts (passed to run-cluster.sh)
  --local             run on this machine even on CloudLab
  --port N            first server port (passed to run-cluster.sh)
  --tls, --insecure   TLS on or off (passed to run-cluster.sh; its default:
                      on over SSH, off on this machine)
  --quick             a few seconds: points "$QUICK_VALUES", 1 repeat, 3 s,
                      20,000 keys, output under plots/tmp/
  -h, --help          this help

Output: PREFIX.csv, and PNGs: $(case "$KIND" in
        scaling) echo "PREFIX.png (bars) and PREFIX.md (the table)" ;;
        *) echo "PREFIX-throughput.png and PREFIX-latency.png" ;;
    esac). Each run's logs stay in logs/<timestamp>/ with its util.png.
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --values) VALUES="${2:?}"; shift 2 ;;
        --goroutines) GOROUTINES="${2:?}"; shift 2 ;;
        --batch) BATCH="${2:?}"; shift 2 ;;
        --servers) SERVERS="${2:?}"; shift 2 ;;
        --clients) CLIENTS="${2:?}"; shift 2 ;;
        --repeats) REPEATS="${2:?}"; shift 2 ;;
        --secs) SECS="${2:?}"; shift 2 ;;
        --records) RECORDS="${2:?}"; shift 2 ;;
        --server-args) SERVER_ARGS="${2?}"; shift 2 ;;
        --client-args) CLIENT_ARGS="${2?}"; shift 2 ;;
        --out) OUT="${2:?}"; shift 2 ;;
        --hosts-file) CLUSTER_ARGS+=(--hosts-file "${2:?}"); shift 2 ;;
        --local) CLUSTER_ARGS+=(--local); shift ;;
        --port) CLUSTER_ARGS+=(--port "${2:?}"); shift 2 ;;
        --tls) CLUSTER_ARGS+=(--tls); shift ;;
        --insecure) CLUSTER_ARGS+=(--insecure); shift ;;
        --quick) QUICK=1; shift ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
if (( QUICK )); then
    VALUES="$QUICK_VALUES"; REPEATS=1; SECS=3; RECORDS=20000
    OUT="${OUT:-$ROOT/plots/tmp/$KIND-quick}"
fi
OUT="${OUT:-$ROOT/plots/$KIND}"
for n in "$GOROUTINES" "$BATCH" "$SERVERS" "$CLIENTS" "$REPEATS" "$SECS" "$RECORDS"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $n" >&2; exit 2; }
done
read -r -a POINTS <<< "$VALUES"
for v in "${POINTS[@]}"; do
    if [[ $KIND == scaling ]]; then
        [[ $v =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || { echo "not SERVERSxCLIENTS: $v" >&2; exit 2; }
    else
        [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $v" >&2; exit 2; }
    fi
done

echo "sweep:        $KIND over ${POINTS[*]}"
case "$KIND" in
    batch) echo "fixed:        goroutines=$GOROUTINES servers=$SERVERS clients=$CLIENTS" ;;
    clients) echo "fixed:        batch=$BATCH servers=$SERVERS clients=$CLIENTS" ;;
    scaling) echo "fixed:        goroutines=$GOROUTINES batch=$BATCH" ;;
esac
echo "repeats:      $REPEATS    secs: $SECS    records: $RECORDS"
echo "server args:  ${SERVER_ARGS:-(none)}    client args: ${CLIENT_ARGS:-(none)}"
echo "cluster args: ${CLUSTER_ARGS[*]:-(none)}"
echo "output:       $OUT.csv and figures"

mkdir -p "$(dirname "$OUT")"
(cd "$ROOT" && go build -o bin/ ./cmd/...)
CSV="$OUT.csv"
"$ROOT/bin/kvsplot" row -header > "$CSV"

total=$(( ${#POINTS[@]} * REPEATS ))
done_runs=0
started=$SECONDS
for v in "${POINTS[@]}"; do
    servers=$SERVERS clients=$CLIENTS goroutines=$GOROUTINES batch=$BATCH
    case "$KIND" in
        batch) batch=$v ;;
        clients) goroutines=$v ;;
        scaling) servers=${v%x*}; clients=${v#*x} ;;
    esac
    for ((rep = 1; rep <= REPEATS; rep++)); do
        eta="?"
        if (( done_runs > 0 )); then
            eta="$(( (SECONDS - started) * (total - done_runs) / done_runs ))s"
        fi
        tag="[$((done_runs + 1))/$total $KIND=$v repeat $rep/$REPEATS, left ~$eta]"
        echo "$tag servers=$servers clients=$clients goroutines=$goroutines batch=$batch"
        log=$(mktemp)
        # shellcheck disable=SC2086 # the args variables hold lists of flags
        if ! "$ROOT/run-cluster.sh" --no-build "${CLUSTER_ARGS[@]+"${CLUSTER_ARGS[@]}"}" "$servers" "$clients" "$SERVER_ARGS" \
            "-numClients $goroutines -batchSize $batch -secs $SECS -records $RECORDS $CLIENT_ARGS" 2>&1 |
            tee "$log" | sed -u "s|^|  |" | grep --line-buffered -E '^\s+(\[|total|throughput|batch latency)'; then
            :
        fi
        dir=$(sed -n 's/^logs: *//p' "$log")
        if ! grep -q '^total [0-9]* op/s$' "$log" || [[ -z $dir ]]; then
            echo "run failed; its output:" >&2
            tail -20 "$log" >&2
            rm -f "$log"
            exit 1
        fi
        rm -f "$log"
        "$ROOT/bin/kvsplot" row -sweep "$KIND" -repeat "$rep" "$dir" >> "$CSV"
        done_runs=$((done_runs + 1))
    done
done

echo "rows: $CSV"
case "$KIND" in
    batch) "$ROOT/bin/kvsplot" sweep -x batch_size -title "throughput against batch size ($GOROUTINES goroutines)" -out "$OUT" "$CSV" ;;
    clients) "$ROOT/bin/kvsplot" sweep -x goroutines -title "throughput against goroutines ($BATCH-op batches)" -out "$OUT" "$CSV" ;;
    scaling) "$ROOT/bin/kvsplot" scaling -out "$OUT" "$CSV" ;;
esac
