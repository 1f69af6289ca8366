#!/usr/bin/env bash
# run-cluster.sh - start servers and load clients, run the load, report
# each server's median ops/s and the total.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMCC="${BATCHKV_TMCC:-/usr/local/etc/emulab/tmcc}"

usage() {
    cat <<USAGE
Usage: $0 [options] [server_count] [client_count] [server_args] [client_args]

Starts server_count kvsserver processes and client_count kvsclient load
generators, waits for the clients to finish, stops the servers and prints
one line "<node> median <N> op/s" per server and a last line "total <N> op/s".

Where it runs:
  local     no cluster found: servers on 127.0.0.1, 127.0.0.2, ... with ports
            8080, 8081, ...; clients on this machine. Defaults: 1 server, 1 client.
  CloudLab  when $TMCC exists: the nodes 'tmcc hostnames' names (each
            once, however many LANs it is on: node0, node1, ...), reached
            over SSH; servers on the first server_count nodes, clients on
            the next client_count. Defaults: half the nodes each.
  hosts     --hosts-file FILE: one SSH host name per line (blank lines and
            # comments skipped), used like CloudLab's nodes.
  In the SSH modes this repository must sit at the same path on every node
  (as on CloudLab's shared home or NFS), with binaries built by this script.

Arguments:
  server_args  extra flags for every kvsserver (quoted), e.g. "-vnodes 256"
  client_args  extra flags for every kvsclient (quoted), e.g. "-workload YCSB-A -secs 10"
The script gives each server -port, -peers and -self, and each client -hosts.

Security:
  With TLS every connection is mutual TLS 1.3: the script makes a CA and
  certificates under the run's log directory (certs/: one node certificate
  per server naming its host, one client certificate) with bin/kvsctl, and
  gives every process -tls-ca, -tls-cert and -tls-key. In the SSH modes the
  log directory sits in the shared repository, which carries them to every
  node; keys are mode 0600.
  TLS is the default in the SSH modes (CloudLab nodes have public
  addresses); plaintext is the default on this machine (loopback only).

Options:
  --tls              TLS on this machine too
  --insecure         plaintext in the SSH modes: servers get -insecure, and
                     anyone who reaches their ports owns the cluster
  --hosts-file FILE  run over SSH on the hosts listed in FILE
  --local            run on this machine even if CloudLab's tmcc exists
  --port N           first server port (default 8080)
  --no-build         use the binaries already in bin/
  --keep-data        keep the replicated servers' data dirs under the log
                     directory after the run (by default they are removed:
                     hundreds of MB a run); only for dirs this script chose
  --spares N         also start N spare servers with -join (local: the next
                     addresses; SSH: the nodes after the clients'); they
                     hold nothing until added. At RF=1 without -data-dir
                     every server then gets -in-memory: its shards are
                     one-replica Raft groups kept in memory, which can move
  --grow-at S        S seconds into the load, add the spares one by one
                     ('kvsctl add-server': each takes its share of replicas
                     and leaders while the load runs); the steps go to
                     grow.log, and util.png shows the servers' ops/s move
  --top              while the load runs, show 'kvsctl top' (every server's
                     ops/s, CPU, memory, network, connections, errors, and
                     each shard's leader and lag) instead of one line a second
  --thp MODE         on this machine, set transparent huge pages to MODE
                     (always, madvise or never) for the run and restore the
                     old mode after it; keep leaves it as it is. Default:
                     always, when this user may write
                     /sys/kernel/mm/transparent_hugepage/enabled. The Go
                     runtime asks for no huge pages, so under madvise (a
                     common default) the heaps, which grow for the first
                     20-25 s of a replicated load, are faulted in 4 KiB at a
                     time; RF=3 ran at 0.35-0.44 of RF=1 that way on one
                     2-core VM, and at 0.68-0.70 with always
                     (docs/results.md). Over SSH the nodes keep their mode.
  -h, --help         this help

Logs go to logs/<timestamp>/ (server-<node>.log, client-<node>.log,
report.txt, and util.csv / util.png: every node's per-second ops/s, CPU %,
RSS and network rates, as a table and a plot); logs/latest points at the
newest run. On this machine each server's PID is in
logs/latest/pids/server-<host:port>.pid while the run lasts: to stop one
(say, after 'kvsctl remove-server'), kill "\$(cat logs/latest/pids/server-127.0.0.1:8080.pid)".

The result: the report's last line, "total <N> op/s", the sum of each
server's median ops/s. The clients' "throughput" lines before it are their
own view of the same load (over every second, so a little lower).

Per-second lines: one per second, each server's ops/s. When the cluster's
members can change (-rf above 1, -data-dir, -in-memory or --spares) they
follow the cluster's current members, read with 'kvsctl top -once': a
server added with 'kvsctl add-server' appears, a removed one goes.

Testing (cloudlab-sim.sh only; leave unset otherwise):
  BATCHKV_TMCC=PATH        use PATH instead of /usr/local/etc/emulab/tmcc
  BATCHKV_SSH_CONFIG=FILE  give every ssh -F FILE (keys, known_hosts)
  BATCHKV_CLIENT_ARGS=ARGS appended to client_args (check-readme.sh: "-secs 3")

Examples:
  $0                                   # 1 server + 1 client on this machine, YCSB-B, 30 s
  $0 2 2 "" "-workload YCSB-A -secs 10"
  $0 --hosts-file hosts.txt 4 4 "" "-numClients 128 -batchSize 8192"
  $0 --spares 1 --grow-at 15 3 1 "-rf 3 -shards 24" "-secs 40"
USAGE
}

HOSTS_FILE=""
FORCE_LOCAL=0
BASE_PORT=8080
BUILD=1
TOP=0
KEEP_DATA=0
SPARES=0
GROW_AT=""
THP=auto
THP_FILE="${BATCHKV_THP_FILE:-/sys/kernel/mm/transparent_hugepage/enabled}"
THP_WAS="" # the mode to restore on exit, once this script has changed it

TLS=auto
while [[ $# -gt 0 && $1 == -* ]]; do
    case "$1" in
        -h|--help|-help) usage; exit 0 ;;
        --tls) TLS=1; shift ;;
        --insecure) TLS=0; shift ;;
        --hosts-file) HOSTS_FILE="${2:?--hosts-file needs a file}"; shift 2 ;;
        --local) FORCE_LOCAL=1; shift ;;
        --port) BASE_PORT="${2:?--port needs a number}"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --top) TOP=1; shift ;;
        --keep-data) KEEP_DATA=1; shift ;;
        --spares) SPARES="${2:?--spares needs a number}"; shift 2 ;;
        --grow-at) GROW_AT="${2:?--grow-at needs seconds}"; shift 2 ;;
        --thp) THP="${2:?--thp needs always, madvise, never or keep}"; shift 2 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for arg in "$@"; do
    case "$arg" in help|-h|--help|-help) usage; exit 0 ;; esac
done
if [[ $# -gt 4 ]]; then usage >&2; exit 2; fi

NODES=()
if [[ -n $HOSTS_FILE ]]; then
    MODE=ssh
    if [[ ! -r $HOSTS_FILE ]]; then
        echo "--hosts-file $HOSTS_FILE: no such readable file. Write the SSH host names of your nodes into it, one a line," >&2
        echo "  (blank lines and # comments are skipped); to run on this machine instead, leave --hosts-file out." >&2
        exit 2
    fi
    while read -r line; do
        line="${line%%#*}"
        line="${line//[[:space:]]/}"
        if [[ -n $line ]]; then NODES+=("$line"); fi
    done < "$HOSTS_FILE"
elif [[ $FORCE_LOCAL -eq 0 && -x $TMCC ]]; then
    MODE=ssh
    # One line per node and LAN: NAME=<node>-<lan> IP=<address>
    # ALIASES='<node>-<interface number> <node or blank>'. A node on two
    # LANs has two lines, so the nodes are the first aliases' names, less
    # their interface numbers, once each, in node0, node1, ..., node10 order.
    mapfile -t NODES < <("$TMCC" hostnames | sed -n "s/.*ALIASES='\([^ ']*\)-[0-9][0-9]*[ '].*/\1/p" | sort -u -V)
    if ((${#NODES[@]} == 0)); then
        echo "'$TMCC hostnames' named no node (want lines like NAME=node0-link-0 IP=10.10.1.1 ALIASES='node0-0 node0')" >&2
        exit 2
    fi
else
    MODE=local
fi

if [[ $TLS == auto ]]; then
    if [[ $MODE == ssh ]]; then TLS=1; else TLS=0; fi
fi
if [[ $MODE == ssh ]]; then
    SERVER_COUNT="${1:-$(( ${#NODES[@]} / 2 ))}"
    CLIENT_COUNT="${2:-$(( ${#NODES[@]} - SERVER_COUNT ))}"
else
    SERVER_COUNT="${1:-1}"
    CLIENT_COUNT="${2:-1}"
fi
SERVER_ARGS="${3:-}"
CLIENT_ARGS="${4:-}${BATCHKV_CLIENT_ARGS:+ $BATCHKV_CLIENT_ARGS}"
if ! [[ $SERVER_COUNT =~ ^[0-9]+$ && $CLIENT_COUNT =~ ^[0-9]+$ ]] || (( SERVER_COUNT < 1 || CLIENT_COUNT < 1 )); then
    echo "server_count and client_count must be positive integers" >&2; exit 2
fi
if ! [[ $SPARES =~ ^[0-9]+$ ]] || { [[ -n $GROW_AT ]] && ! [[ $GROW_AT =~ ^[0-9]+$ ]]; }; then
    echo "--spares and --grow-at take whole numbers" >&2; exit 2
fi
case $THP in auto|keep|always|madvise|never) ;; *) echo "--thp takes always, madvise, never or keep" >&2; exit 2 ;; esac
if [[ -n $GROW_AT ]] && (( SPARES == 0 )); then
    echo "--grow-at needs --spares" >&2; exit 2
fi
if [[ $MODE == ssh ]] && (( SERVER_COUNT + CLIENT_COUNT + SPARES > ${#NODES[@]} )); then
    echo "need $((SERVER_COUNT + CLIENT_COUNT + SPARES)) nodes, have ${#NODES[@]}: ${NODES[*]}" >&2; exit 2
fi
if [[ $MODE == local ]] && (( SERVER_COUNT + SPARES > 250 )); then
    echo "at most 250 local servers" >&2; exit 2
fi

SSH_OPTS=(-o StrictHostKeyChecking=no -o BatchMode=yes)
if [[ -n ${BATCHKV_SSH_CONFIG:-} ]]; then SSH_OPTS+=(-F "$BATCHKV_SSH_CONFIG"); fi
RUN_ID="$(date +%Y%m%d-%H%M%S)"
LOG_DIR="$ROOT/logs/$RUN_ID"
mkdir -p "$LOG_DIR/pids"
ln -sfn "$RUN_ID" "$ROOT/logs/latest"

echo "mode:         $MODE"
if [[ $MODE == ssh ]]; then echo "nodes:        ${NODES[*]}"; fi
echo "servers:      $SERVER_COUNT    server_args: ${SERVER_ARGS:-(none)}"
echo "clients:      $CLIENT_COUNT    client_args: ${CLIENT_ARGS:-(none)}"
echo "first port:   $BASE_PORT"
echo "tls:          $( ((TLS)) && echo "on (certificates in $LOG_DIR/certs)" || echo off)"
echo "logs:         $LOG_DIR"

if [[ $BUILD -eq 1 ]]; then
    echo "building bin/kvsserver bin/kvsclient bin/kvsctl bin/kvsreport bin/kvsplot"
    (cd "$ROOT" && go build -o bin/ ./cmd/kvsserver ./cmd/kvsclient ./cmd/kvsctl ./cmd/kvsreport ./cmd/kvsplot)
fi

# Every process started here is tracked by PID and stopped on exit.
LOCAL_PIDS=()      # local processes (servers, clients, or ssh sessions)
REMOTE_PIDFILES=() # "host:pidfile" of remote processes
# shellcheck disable=SC2317,SC2029 # called by trap; pidfile paths expand here on purpose
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for entry in "${REMOTE_PIDFILES[@]+"${REMOTE_PIDFILES[@]}"}"; do
        ssh "${SSH_OPTS[@]}" "${entry%%:*}" "kill \$(cat '${entry#*:}') 2>/dev/null; rm -f '${entry#*:}'" 2>/dev/null || true
    done
    for pid in "${LOCAL_PIDS[@]+"${LOCAL_PIDS[@]}"}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${LOCAL_PIDS[@]+"${LOCAL_PIDS[@]}"}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [[ -n $THP_WAS ]]; then
        { echo "$THP_WAS" > "$THP_FILE"; } 2>/dev/null || echo "could not restore transparent huge pages to $THP_WAS in $THP_FILE" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

# Transparent huge pages on this machine (--thp): the mode in brackets.
if [[ $MODE == local ]]; then
    thp_now=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$THP_FILE" 2>/dev/null || true)
    thp_want=$THP
    if [[ $THP == auto ]]; then thp_want=always; fi
    if [[ -z $thp_now ]]; then
        echo "huge pages:   unknown (no mode in $THP_FILE)"
    elif [[ $thp_want == keep || $thp_want == "$thp_now" ]]; then
        echo "huge pages:   $thp_now"
    elif { echo "$thp_want" > "$THP_FILE"; } 2>/dev/null; then
        THP_WAS=$thp_now
        echo "huge pages:   $thp_want for this run (was $thp_now; restored after it; --thp keep leaves it)"
    elif [[ $THP == auto ]]; then
        echo "huge pages:   $thp_now (could not set always: not root; see --thp in --help)"
    else
        echo "--thp $THP: cannot write $THP_FILE (run as root)" >&2; exit 2
    fi
elif [[ $THP != auto && $THP != keep ]]; then
    echo "huge pages:   --thp $THP applies to this machine only; the nodes keep their own mode"
fi

# start NAME HOST ROLE ARGS...: run bin/ROLE with ARGS on HOST (locally in
# local mode), logging to LOG_DIR/ROLE-NAME.log; sets STARTED_PID (and, over
# SSH, STARTED_PIDFILE: "host:pidfile" of the remote process).
start() {
    local name=$1 host=$2 role=$3
    shift 3
    local log="$LOG_DIR/${role#kvs}-$name.log"
    if [[ $MODE == local ]]; then
        "$ROOT/bin/$role" "$@" > "$log" 2>&1 &
    else
        local pidfile="/tmp/batchkv-$RUN_ID-$role-$name.pid"
        local quoted
        quoted=$(printf ' %q' "$@")
        # shellcheck disable=SC2029 # the command is built here, quoted with %q
        ssh "${SSH_OPTS[@]}" "$host" "cd $(printf %q "$ROOT") && echo \$\$ > $pidfile && exec ./bin/$role$quoted" > "$log" 2>&1 &
        REMOTE_PIDFILES+=("$host:$pidfile")
        STARTED_PIDFILE="$host:$pidfile"
    fi
    STARTED_PID=$!
    LOCAL_PIDS+=("$STARTED_PID")
    if [[ $MODE == local ]]; then echo "$STARTED_PID" > "$LOG_DIR/pids/${role#kvs}-$name.pid"; fi
    return 0
}

# Servers: the members first, then the spares.
SERVER_ADDRS=()
SERVER_NAMES=()
for ((i = 0; i < SERVER_COUNT + SPARES; i++)); do
    if [[ $MODE == local ]]; then
        SERVER_ADDRS+=("127.0.0.$((i + 1)):$((BASE_PORT + i))")
        SERVER_NAMES+=("127.0.0.$((i + 1)):$((BASE_PORT + i))")
    else
        node=$i
        if (( i >= SERVER_COUNT )); then node=$((i + CLIENT_COUNT)); fi
        SERVER_ADDRS+=("${NODES[$node]}:$BASE_PORT")
        SERVER_NAMES+=("${NODES[$node]}")
    fi
done
PEERS=$(IFS=,; echo "${SERVER_ADDRS[*]:0:SERVER_COUNT}")

# Certificates: a CA, a node certificate per server naming its host, one
# client certificate, and an admin certificate for membership changes.
SERVER_TLS=() # per server: its TLS flags, space-separated
CLIENT_TLS=()
ADMIN_TLS=()
if (( TLS )); then
    CERTS="$LOG_DIR/certs"
    "$ROOT/bin/kvsctl" certs init -dir "$CERTS" > /dev/null
    for ((i = 0; i < SERVER_COUNT + SPARES; i++)); do
        "$ROOT/bin/kvsctl" certs issue -dir "$CERTS" -name "server$i" -role node -hosts "${SERVER_ADDRS[$i]%:*}" > /dev/null
        SERVER_TLS+=("-tls-ca $CERTS/ca.crt -tls-cert $CERTS/server$i.crt -tls-key $CERTS/server$i.key")
    done
    "$ROOT/bin/kvsctl" certs issue -dir "$CERTS" -name client -role client > /dev/null
    CLIENT_TLS=(-tls-ca "$CERTS/ca.crt" -tls-cert "$CERTS/client.crt" -tls-key "$CERTS/client.key")
    "$ROOT/bin/kvsctl" certs issue -dir "$CERTS" -name admin -role admin > /dev/null
    ADMIN_TLS=(-tls-ca "$CERTS/ca.crt" -tls-cert "$CERTS/admin.crt" -tls-key "$CERTS/admin.key")
else
    for ((i = 0; i < SERVER_COUNT + SPARES; i++)); do
        if [[ $MODE == ssh ]]; then SERVER_TLS+=("-insecure"); else SERVER_TLS+=(""); fi
    done
fi
# A replicated server (-rf above 1) is always durable: unless server_args
# name a -data-dir, each keeps its Raft logs under this run's directory.
# A run with spares at RF=1 and no -data-dir is memory-only with
# -in-memory: each shard is a one-replica Raft group kept in memory, so
# that it can move (the memory-only ring has a fixed membership).
RF=1
if [[ " $SERVER_ARGS " =~ [[:space:]]--?rf[=[:space:]]+([0-9]+) ]]; then RF=${BASH_REMATCH[1]}; fi
HAS_DATA_DIR=0
if [[ " $SERVER_ARGS " == *" -data-dir"* || " $SERVER_ARGS " == *" --data-dir"* ]]; then HAS_DATA_DIR=1; fi
DURABLE=0
if (( RF > 1 && ! HAS_DATA_DIR )); then
    DURABLE=1
    echo "data:         $LOG_DIR/data/<server> (removed after the run unless --keep-data)"
fi
if (( SPARES > 0 && HAS_DATA_DIR )) && [[ $MODE == local ]]; then
    echo "--spares with a -data-dir in server_args: every local server would share it; leave -data-dir out" >&2; exit 2
fi
MEMORY_ARGS=()
if (( SPARES > 0 && RF == 1 && ! HAS_DATA_DIR )) && [[ " $SERVER_ARGS " != *" -in-memory"* && " $SERVER_ARGS " != *" --in-memory"* ]]; then
    MEMORY_ARGS=(-in-memory)
    echo "memory only:  -in-memory (shards are one-replica Raft groups kept in memory)"
fi
# wait_port ADDR PID NAME: wait until the server at ADDR accepts
# connections; exit with its log if its process PID ends first.
wait_port() {
    local addr=$1 pid=$2 name=$3
    for ((try = 0; ; try++)); do
        if (exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null; then return; fi
        if ! kill -0 "$pid" 2>/dev/null || (( try >= 100 )); then
            echo "server $addr did not start; its log:" >&2
            cat "$LOG_DIR/server-$name.log" >&2
            exit 1
        fi
        sleep 0.1
    done
}
SERVER_PIDS=()
SERVER_PIDFILES=()
for ((i = 0; i < SERVER_COUNT + SPARES; i++)); do
    addr=${SERVER_ADDRS[$i]}
    data_args=()
    if (( DURABLE )); then data_args=(-data-dir "$LOG_DIR/data/server$i"); fi
    member_args=(-peers "$PEERS")
    if (( i >= SERVER_COUNT )); then
        # A spare joins through the first member once that one is up.
        wait_port "${SERVER_ADDRS[0]}" "${SERVER_PIDS[0]}" "${SERVER_NAMES[0]}"
        member_args=(-join "${SERVER_ADDRS[0]}")
    fi
    # shellcheck disable=SC2086 # server_args and the TLS flags are lists of flags
    start "${SERVER_NAMES[$i]}" "${addr%:*}" kvsserver -host "${addr%:*}" -port "${addr##*:}" "${member_args[@]}" -self "$addr" \
        "${data_args[@]+"${data_args[@]}"}" "${MEMORY_ARGS[@]+"${MEMORY_ARGS[@]}"}" ${SERVER_TLS[$i]} $SERVER_ARGS
    SERVER_PIDS+=("$STARTED_PID")
    if [[ $MODE == ssh ]]; then SERVER_PIDFILES+=("$STARTED_PIDFILE"); fi
done

# Wait until every server accepts connections.
for ((i = 0; i < SERVER_COUNT + SPARES; i++)); do
    wait_port "${SERVER_ADDRS[$i]}" "${SERVER_PIDS[$i]}" "${SERVER_NAMES[$i]}"
done
echo "servers up: $PEERS"
if (( SPARES > 0 )); then echo "spares up:    $(IFS=,; echo "${SERVER_ADDRS[*]:SERVER_COUNT}")"; fi

# Clients. A client that checks its run (-check) writes the visualization
# of a violation into the run's directory.
CLIENT_PIDS=()
for ((j = 0; j < CLIENT_COUNT; j++)); do
    if [[ $MODE == local ]]; then name="client$j"; host=localhost; else name=${NODES[$((SERVER_COUNT + j))]}; host=$name; fi
    check_args=()
    if [[ " $CLIENT_ARGS " =~ [[:space:]]--?check[[:space:]=] && " $CLIENT_ARGS " != *"-check-html"* ]]; then
        check_args=(-check-html "$LOG_DIR/check-$name.html")
    fi
    # shellcheck disable=SC2086 # client_args is a list of flags
    start "$name" "$host" kvsclient -hosts "$PEERS" "${CLIENT_TLS[@]+"${CLIENT_TLS[@]}"}" \
        "${check_args[@]+"${check_args[@]}"}" $CLIENT_ARGS
    CLIENT_PIDS+=("$STARTED_PID")
done

# grow: add the spares one by one, in the background, logging to grow.log.
grow() {
    for ((i = SERVER_COUNT; i < SERVER_COUNT + SPARES; i++)); do
        echo "add-server ${SERVER_ADDRS[$i]} at_unix_ms $(date +%s%3N)"
        "$ROOT/bin/kvsctl" -hosts "$PEERS" "${ADMIN_TLS[@]+"${ADMIN_TLS[@]}"}" add-server "${SERVER_ADDRS[$i]}" || echo "add-server failed"
    done
    echo "grown at_unix_ms $(date +%s%3N)"
    "$ROOT/bin/kvsctl" -hosts "$PEERS" "${CLIENT_TLS[@]+"${CLIENT_TLS[@]}"}" map || true
}

# Whether the members can change during the run: then the per-second
# lines follow the cluster's map, not the servers started here.
CHANGING=0
if (( RF > 1 || HAS_DATA_DIR || SPARES > 0 )) || [[ " $SERVER_ARGS " == *" -in-memory"* || " $SERVER_ARGS " == *" --in-memory"* ]]; then
    CHANGING=1
fi
ALL_ADDRS=$(IFS=,; echo "${SERVER_ADDRS[*]}")
# member_rates prints " <member> <ops/s> ops/s;" for every member of the
# cluster's current map, over one second; a member that does not answer
# shows as down.
member_rates() {
    local table
    table=$("$ROOT/bin/kvsctl" -hosts "$ALL_ADDRS" -timeout 1s "${CLIENT_TLS[@]+"${CLIENT_TLS[@]}"}" top -once -no-shards 2>/dev/null) || true
    if [[ -z $table ]]; then sleep 1; echo " (no server answered)"; return; fi
    awk 'NR > 1 && $1 != "total" {
        if ($2 ~ /^[0-9]+$/) printf " %s %s ops/s;", $1, $2
        else if ($2 ~ /^unreachable/) printf " %s down;", $1
        else printf " %s - ops/s;", $1
    }' <<< "$table"
}

# Progress every second, from the servers' own reports, until the clients end.
SECONDS=0
GROWN=0
while :; do
    if [[ -n $GROW_AT ]] && (( ! GROWN && SECONDS >= GROW_AT )); then
        GROWN=1
        echo "[$(printf '%4d' "$SECONDS")s] adding the spares (steps in $LOG_DIR/grow.log)"
        grow > "$LOG_DIR/grow.log" 2>&1 &
        GROW_PID=$!
        LOCAL_PIDS+=("$GROW_PID")
    fi
    running=0
    for pid in "${CLIENT_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then running=$((running + 1)); fi
    done
    if (( running == 0 )); then break; fi
    if (( TOP )); then
        # One table of rates over the next second (it takes that second).
        table=$("$ROOT/bin/kvsctl" -hosts "$PEERS" "${CLIENT_TLS[@]+"${CLIENT_TLS[@]}"}" top -once 2>&1 || true)
        if [[ -t 1 ]]; then printf '\033[H\033[2J'; fi
        printf '[%4ds] clients running %d\n%s\n\n' "$SECONDS" "$running" "$table"
        continue
    fi
    if (( CHANGING )); then
        # The cluster's current members and their rates over the next
        # second (kvsctl top -once takes that second).
        line=$(member_rates)
    else
        line=""
        for name in "${SERVER_NAMES[@]}"; do
            rate=$( (grep '^ops/s' "$LOG_DIR/server-$name.log" 2>/dev/null || true) | tail -n 1 | awk '{printf "%.0f", $2}')
            line+=" $name ${rate:-0} ops/s;"
        done
        sleep 1
    fi
    printf '[%4ds] clients running %d;%s\n' "$SECONDS" "$running" "$line"
done
failed=0
for ((j = 0; j < CLIENT_COUNT; j++)); do
    if ! wait "${CLIENT_PIDS[$j]}"; then
        failed=1
        echo "client $j failed; the end of its log:" >&2
        tail -n 5 "$LOG_DIR"/client-*.log >&2 || true
    fi
done
echo "clients (each its own view of the load; the run's result is the total below):"
grep -h -E '^(throughput|batch latency|after warm-up|client cpu_s|refused ops|sync |linearizab|NOT linearizable)' "$LOG_DIR"/client-*.log || true
if (( GROWN )); then
    wait "$GROW_PID" || true
    grep -E '^(done|  )' "$LOG_DIR/grow.log" || tail -n 3 "$LOG_DIR/grow.log"
fi

# Stop the servers, then report. Over SSH the server itself gets the signal
# (a remote command gets none when its ssh is killed: it would run on, and
# its log would end before its shutdown); its ssh ends when it does.
if [[ $MODE == ssh ]]; then
    for entry in "${SERVER_PIDFILES[@]}"; do
        # shellcheck disable=SC2029 # the pidfile path expands here on purpose
        ssh "${SSH_OPTS[@]}" "${entry%%:*}" "kill \$(cat '${entry#*:}')" 2>/dev/null || true
    done
else
    for pid in "${SERVER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
fi
for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
reports=()
for name in "${SERVER_NAMES[@]}"; do reports+=("$LOG_DIR/server-$name.log"); done
rm -rf "$LOG_DIR/pids"
echo "report (the result is the last line, total: each server's median ops/s, summed):"
"$ROOT/bin/kvsreport" "${reports[@]}" | tee "$LOG_DIR/report.txt"
# The Raft data this script put under the run's directory goes, unless
# asked to stay: a replicated run writes hundreds of MB.
if (( DURABLE && ! KEEP_DATA )); then rm -rf "$LOG_DIR/data"; fi
# Every node's per-second samples as one CSV, and the run's utilization plot.
if "$ROOT/bin/kvsplot" run "$LOG_DIR"; then
    echo "utilization: $LOG_DIR/util.csv $LOG_DIR/util.png"
else
    echo "warning: could not plot the run's utilization" >&2
fi
if (( GROWN )); then
    if "$ROOT/bin/kvsplot" grow "$LOG_DIR"; then
        echo "growth: $LOG_DIR/grow.log $LOG_DIR/grow.png"
    else
        echo "warning: could not read the growth of the run" >&2
    fi
fi
exit "$failed"
