#!/usr/bin/env bash
# Fault experiments: one command per scenario. Builds bin/kvsserver and
# bin/kvschaos, then runs a local 3-server RF=3 cluster under load, injects
# the scenario's fault, checks every run (linearizability with porcupine,
# no acknowledged write lost, replicas converge, the scenario's targets)
# and ends with "verdict: PASS ..." or "verdict: FAIL <reason>".
set -euo pipefail

ROOT=$(cd "$(dirname "$0")" && pwd)

usage() {
    cat <<'USAGE'
usage: ./chaos.sh SCENARIO|all [flags]
       ./chaos.sh --help

Scenarios: slow-follower slow-network slow-network-egress crash-leader
crash-follower partition pause rebalance replace-dead move-killed random, or all of them in turn. A full disk (needs
root to mount a tmpfs; not part of all): disk-full. Power cuts (need
root and /dev/fuse; not part of all): power-cut (mid-load), power-cut-snapshot,
power-cut-move, power-cut-map, or power-cut-all for the four in turn. Results (summary.md, timeline.png,
timeline.csv, events.csv, status.csv, history.csv, server logs, and
linearizability.html on a violation) go to logs/chaos-<time>/<scenario>/.
Exit status 0 when every verdict is PASS, 1 otherwise.

Flags are kvschaos's; ./chaos.sh --help lists them all. Examples:
  ./chaos.sh slow-follower
  ./chaos.sh rebalance               # add a 4th server, rebalance, remove one
  ./chaos.sh slow-network --fault 20s --latencies 100ms,250ms,500ms
  ./chaos.sh slow-network --repeat 5 --server-cpu 0.5   # on half a CPU per server
  ./chaos.sh random --fault 120s --seed 42
  ./chaos.sh all --repeat 5          # every scenario 5 times, then a tally
  ./chaos.sh partition --server-args "-read-mode lease"
  ./chaos.sh power-cut --repeat 5    # 5 power cuts mid-load (strict POSIX fs)
  ./chaos.sh power-cut-all --powercut-mode ext4
  ./chaos.sh disk-full --repeat 5    # a follower's disk full under the load
USAGE
}

if (( $# == 0 )); then
    usage >&2
    exit 2
fi
case $1 in
    -h|--help) usage; echo; (cd "$ROOT" && go run ./cmd/kvschaos -h 2>&1) || true; exit 0 ;;
esac
scenario=$1
shift

(cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvschaos)
cd "$ROOT"
# Go's flag package takes flags before the scenario only.
exec ./bin/kvschaos "$@" "$scenario"
