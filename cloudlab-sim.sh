#!/usr/bin/env bash
# cloudlab-sim.sh - run-cluster.sh's CloudLab mode, end to end, on this machine.
#
# Usage: ./cloudlab-sim.sh [--self-test] [--timeout SECS] [--] [server_args [client_args]]
#
# Builds a simulated CloudLab experiment of 4 nodes, node0..node3: one network
# namespace each (10.213.7.1-4/24 on a bridge that sits in a fifth, "switch"
# namespace; the root namespace is not touched), each with its own hostname
# and /etc/hosts naming every node as CloudLab does, a real sshd listening on
# the node's address only, and a fake tmcc whose `hostnames` answers like
# CloudLab's for nodes on two LANs. Then, on node0, as a CloudLab user would, it runs
#     ./run-cluster.sh 2 2 [server_args [client_args]]
# (servers on node0 and node1, clients on node2 and node3, over SSH, TLS on)
# and checks that:
#   - run-cluster.sh found the four nodes, each once (not once per LAN);
#   - run-cluster.sh exits 0 in ssh mode with TLS on, and logs/latest is its
#     run: report.txt (both servers and a positive total), server-node0.log,
#     server-node1.log (each ending with the server's own shutdown, as on this
#     machine), client-node2.log, client-node3.log, util.csv rows for all four
#     nodes, a PNG util.png, and the certificates under certs/;
#   - every node was reached over SSH from node0;
#   - no process is left: once run-cluster.sh ends, each node runs nothing
#     but its sshd (after a grace period for SSH sessions to close), and
#     once the sshds are stopped the namespaces are empty;
#   - no address outside the simulated cluster is contacted: every node has a
#     default route (to 10.213.7.254, which no node has) and an nftables table
#     that counts and rejects every packet to an address that is neither
#     loopback nor a node's; DNS points at 192.0.2.53, so a lookup counts too.
# The last line is "cloudlab-sim: PASS (...)" or "cloudlab-sim: FAIL: reason";
# the exit status is 0 only on PASS.
#
#   --self-test    shows the two checks above catch a planted fault: a short run
#                  (client_args default "-secs 3 -records 20000 -numClients 8
#                  -batchSize 512") with a process left running on node2 and a
#                  connection attempt to 192.0.2.1:80 from node3; PASS only if
#                  the leftover-process check reports exactly the planted process
#                  and the outside-address check exactly node3's 192.0.2.1, and
#                  every other check passes.
#   --timeout SECS bound on run-cluster.sh's run time (default 600).
#
# Needs root and Linux network namespaces. Installs openssh-server,
# openssh-client, nftables and iproute2 from Debian when missing (with a
# temporary /usr/sbin/policy-rc.d so the package starts no system sshd), and
# runs `go mod download` first: inside the simulation there is no network, and
# run-cluster.sh's own `go build` runs there with GOPROXY=off.
# Keys, sshd configurations, the fake tmcc and the ssh client configuration
# live in a temporary directory; nothing under /etc/ssh or ~/.ssh is read or
# written. run-cluster.sh finds the fake tmcc and the ssh configuration through
# BATCHKV_TMCC and BATCHKV_SSH_CONFIG (documented in its --help, for tests only).
# Everything the script starts or creates is removed on exit, whatever the exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE_COUNT=4
NET=10.213.7                          # the cluster's /24; node i is $NET.(i+1)
OUTSIDE_TEST_ADDR=192.0.2.1           # TEST-NET-1, never routed anywhere
DNS_ADDR=192.0.2.53                   # the nodes' resolver: any lookup counts as outside
GRACE=20                              # seconds for SSH sessions to end after the run
TAG="cksim$$"                         # unique namespace names
SWITCH_NS="$TAG-switch"
NS=()
for ((i = 0; i < NODE_COUNT; i++)); do NS+=("$TAG-node$i"); done

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

SELF_TEST=0
TIMEOUT=600
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --self-test) SELF_TEST=1; shift ;;
        --timeout) TIMEOUT="${2:?--timeout needs seconds}"; shift 2 ;;
        --) shift; break ;;
        --*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
if [[ $# -gt 2 ]]; then usage >&2; exit 2; fi
if ! [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]]; then echo "--timeout needs a positive number of seconds" >&2; exit 2; fi
RUN_ARGS=("$@")
if (( SELF_TEST )) && [[ $# -eq 0 ]]; then
    RUN_ARGS=("" "-secs 3 -records 20000 -numClients 8 -batchSize 512")
fi

say() { echo "cloudlab-sim: $*"; }
joined() { local out; out=$(printf '%s; ' "$@"); echo "${out%; }"; } # joined A B: "A; B"

# State for the exit trap: everything created or started, to undo.
TMP=""
NETNS_MADE=()
SSHD_PIDS=()        # per node, the sshd's PID (its own process: no wrapper)
PLANT_PIDS=()       # --self-test's planted processes
RUN_PID=""          # the run's pipeline (timeout ... | tee)
POLICY_RC_MADE=0
RUN_SSHD_MADE=0
ETC_NETNS_MADE=0
STAGE="starting"
PASS_MSG=""

alive() { # alive PID: running and not a zombie
    local state
    state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}
cmdline() { tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null || true; }
# stop_pid PID [SECS]: SIGTERM, then SIGKILL after SECS (default 5) seconds;
# reaps it if it is our child.
stop_pid() {
    local pid=$1 t
    kill "$pid" 2>/dev/null || true
    for ((t = 0; t < ${2:-5} * 10; t++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
}
# sshd_pids: PIDs of every running /usr/sbin/sshd (to tell which ones an
# install started; only those are stopped).
sshd_pids() {
    local p
    for p in /proc/[0-9]*; do
        if [[ $(readlink "$p/exe" 2>/dev/null) == /usr/sbin/sshd ]]; then echo "${p#/proc/}"; fi
    done
}

# shellcheck disable=SC2317 # called by the trap
on_exit() {
    local status=$? pid ns
    trap - EXIT INT TERM
    set +e
    for pid in "${PLANT_PIDS[@]+"${PLANT_PIDS[@]}"}"; do
        if alive "$pid"; then stop_pid "$pid"; fi
    done
    # Whatever still runs in the simulation was started from it: stop it by
    # PID. First the run (run-cluster.sh on node0 first, given 30 s to stop
    # its remote processes over SSH, one node after the other), while the
    # sshds still run; then the sshds; then anything left.
    local wait_secs=30
    for ns in "${NETNS_MADE[@]+"${NETNS_MADE[@]}"}" sshds "${NETNS_MADE[@]+"${NETNS_MADE[@]}"}"; do
        if [[ $ns == sshds ]]; then
            wait_secs=5
            for pid in "${SSHD_PIDS[@]+"${SSHD_PIDS[@]}"}"; do
                if alive "$pid"; then stop_pid "$pid"; fi
            done
            SSHD_PIDS=()
            continue
        fi
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            if [[ " ${SSHD_PIDS[*]+"${SSHD_PIDS[*]}"} " == *" $pid "* ]] || ! alive "$pid"; then continue; fi
            echo "cloudlab-sim: cleanup: stopping pid $pid in $ns: $(cmdline "$pid")" >&2
            stop_pid "$pid" "$wait_secs"
        done
    done
    if [[ -n $RUN_PID ]]; then wait "$RUN_PID" 2>/dev/null; fi
    for ns in "${NETNS_MADE[@]+"${NETNS_MADE[@]}"}"; do
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    if (( ETC_NETNS_MADE )); then rmdir /etc/netns 2>/dev/null; fi
    if [[ -n $TMP ]]; then rm -rf "$TMP"; fi
    if (( POLICY_RC_MADE )); then rm -f /usr/sbin/policy-rc.d; fi
    if (( RUN_SSHD_MADE )); then rmdir /run/sshd 2>/dev/null; fi
    if [[ $status -eq 0 && -n $PASS_MSG ]]; then
        echo "cloudlab-sim: PASS ($PASS_MSG)"
    else
        if [[ $status -eq 0 ]]; then status=1; fi
        echo "cloudlab-sim: FAIL: $STAGE (exit status $status)"
    fi
    exit "$status"
}
trap on_exit EXIT
trap 'STAGE="interrupted during: $STAGE"; exit 130' INT TERM

if [[ $EUID -ne 0 ]]; then STAGE="needs root (network namespaces, sshd)"; exit 1; fi
START=$SECONDS

# --- what the simulation needs -------------------------------------------------
STAGE="installing openssh-server, openssh-client, nftables, iproute2"
need=()
if [[ ! -x /usr/sbin/sshd ]]; then need+=(openssh-server); fi
if ! command -v ssh > /dev/null || ! command -v ssh-keygen > /dev/null; then need+=(openssh-client); fi
if ! command -v nft > /dev/null; then need+=(nftables); fi
if ! command -v ip > /dev/null; then need+=(iproute2); fi
if ((${#need[@]})); then
    say "installing ${need[*]} from Debian"
    before=" $(sshd_pids | tr '\n' ' ') "
    # The packages must start no service (openssh-server would start an sshd on
    # 0.0.0.0:22): invoke-rc.d asks policy-rc.d, and 101 means "no".
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\n# cloudlab-sim.sh: no service starts while it installs packages\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        POLICY_RC_MADE=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
    if (( POLICY_RC_MADE )); then rm -f /usr/sbin/policy-rc.d; POLICY_RC_MADE=0; fi
    for pid in $(sshd_pids); do
        if [[ $before != *" $pid "* ]]; then
            say "the install started a system sshd (pid $pid); stopping it"
            stop_pid "$pid"
        fi
    done
fi
for cmd in unshare timeout hostname; do
    command -v "$cmd" > /dev/null || { STAGE="$cmd not found"; exit 1; }
done

STAGE="go mod download (the simulation has no network)"
(cd "$ROOT" && go mod download)

# --- the cluster -----------------------------------------------------------------
STAGE="creating the temporary directory"
TMP=$(mktemp -d /tmp/cloudlab-sim.XXXXXX)
chmod 700 "$TMP"

STAGE="building the network (namespaces, bridge, nftables)"
addr() { echo "$NET.$(($1 + 1))"; }
ip netns add "$SWITCH_NS"
NETNS_MADE+=("$SWITCH_NS")
ip -n "$SWITCH_NS" link add br0 type bridge
ip -n "$SWITCH_NS" link set br0 up
if [[ ! -d /etc/netns ]]; then mkdir /etc/netns; ETC_NETNS_MADE=1; fi
hosts="$TMP/hosts"
{
    echo "127.0.0.1	localhost"
    echo "::1	localhost ip6-localhost ip6-loopback"
    echo "# cloudlab-sim.sh: the experiment's nodes, named as on CloudLab"
    for ((i = 0; i < NODE_COUNT; i++)); do echo "$(addr "$i")	node$i-link-0 node$i-0 node$i"; done
} > "$hosts"
for ((i = 0; i < NODE_COUNT; i++)); do
    ns=${NS[$i]}
    ip netns add "$ns"
    NETNS_MADE+=("$ns")
    # ip netns exec bind-mounts /etc/netns/<ns>/* over /etc/*.
    mkdir -p "/etc/netns/$ns"
    cp "$hosts" "/etc/netns/$ns/hosts"
    printf '# cloudlab-sim.sh: any DNS query is an outside contact\nnameserver %s\n' "$DNS_ADDR" > "/etc/netns/$ns/resolv.conf"
    ip -n "$SWITCH_NS" link add "port$i" type veth peer name eth0 netns "$ns"
    ip -n "$SWITCH_NS" link set "port$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    # A default route to a gateway no node has, so that an attempt to reach
    # an outside address is a packet nftables sees (without a route, connect
    # fails before any packet exists); nftables rejects it before it leaves
    # the node, and the bridge leads nowhere anyway.
    ip -n "$ns" route add default via "$NET.254" dev eth0
    if [[ -d /proc/sys/net/ipv6 ]]; then ip -n "$ns" -6 route add default via fe80::254 dev eth0; fi
    cat > "$TMP/nft-node$i" <<NFT
table inet cloudlab_sim {
	counter outside {
	}
	set outside4 {
		type ipv4_addr
		flags dynamic
		size 4096
	}
	set outside6 {
		type ipv6_addr
		flags dynamic
		size 4096
	}
	chain output {
		type filter hook output priority filter; policy accept;
		oif "lo" accept
		ip daddr $NET.1-$NET.$NODE_COUNT accept
		# the kernel's own neighbour discovery and multicast listener reports
		ip6 daddr { fe80::/10, ff02::/16 } meta l4proto ipv6-icmp accept
		meta nfproto ipv4 add @outside4 { ip daddr }
		meta nfproto ipv6 add @outside6 { ip6 daddr }
		counter name "outside" reject
	}
}
NFT
    ip netns exec "$ns" nft -f "$TMP/nft-node$i"
done

STAGE="making SSH keys and sshd configurations"
if [[ ! -d /run/sshd ]]; then mkdir -m 0755 /run/sshd; RUN_SSHD_MADE=1; fi # sshd's privilege separation directory
ssh-keygen -q -t ed25519 -N '' -C cloudlab-sim -f "$TMP/id_ed25519"
cp "$TMP/id_ed25519.pub" "$TMP/authorized_keys"
# Without PAM, sshd refuses an account whose password is locked ("!...").
use_pam=no
if [[ $(getent shadow root | cut -d: -f2) == '!'* ]]; then use_pam=yes; fi
for ((i = 0; i < NODE_COUNT; i++)); do
    d="$TMP/node$i"
    mkdir "$d"
    ssh-keygen -q -t ed25519 -N '' -C "node$i" -f "$d/ssh_host_ed25519_key"
    cat > "$d/sshd_config" <<SSHD
# cloudlab-sim.sh: node$i's sshd; reads nothing under /etc/ssh
ListenAddress $(addr "$i"):22
HostKey $d/ssh_host_ed25519_key
PidFile none
AuthorizedKeysFile $TMP/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM $use_pam
# the keys sit in a directory under /tmp, which is world-writable
StrictModes no
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
AllowAgentForwarding no
AllowTcpForwarding no
PermitTunnel no
LogLevel INFO
SSHD
    /usr/sbin/sshd -t -f "$d/sshd_config"
done
cat > "$TMP/ssh_config" <<SSH
# cloudlab-sim.sh: ssh inside the simulated cluster (given with -F, so
# neither ~/.ssh/config nor /etc/ssh/ssh_config is read)
Host *
    User root
    IdentityFile $TMP/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $TMP/known_hosts
    GlobalKnownHostsFile /dev/null
    ConnectTimeout 10
SSH

STAGE="writing the fake tmcc"
{
    cat <<'HEAD'
#!/bin/sh
# cloudlab-sim.sh's stand-in for CloudLab's /usr/local/etc/emulab/tmcc
case "$1" in
hostnames)
    cat <<'EOF'
HEAD
    # Two LANs, as in a profile with a second network: a line per node and
    # LAN, the second LAN's aliases with no bare name (tmcd's format). The
    # second LAN's addresses are never used: /etc/hosts names the first.
    for ((i = 0; i < NODE_COUNT; i++)); do echo "NAME=node$i-link-0 IP=$(addr "$i") ALIASES='node$i-0 node$i'"; done
    for ((i = 0; i < NODE_COUNT; i++)); do echo "NAME=node$i-lan-1 IP=10.213.8.$((i + 1)) ALIASES='node$i-1  '"; done
    cat <<'TAIL'
EOF
    ;;
*)
    echo "tmcc (cloudlab-sim): unsupported: $*" >&2
    exit 1 ;;
esac
TAIL
} > "$TMP/tmcc"
chmod 755 "$TMP/tmcc"

STAGE="starting an sshd on every node"
for ((i = 0; i < NODE_COUNT; i++)); do
    # unshare execs sh, which sets the node's hostname and execs sshd: $! is
    # the sshd itself.
    # shellcheck disable=SC2016 # $1..$3 expand in the inner sh
    ip netns exec "${NS[$i]}" unshare --uts /bin/sh -c 'hostname "$1" && exec /usr/sbin/sshd -D -f "$2" -E "$3"' \
        sh "node$i" "$TMP/node$i/sshd_config" "$TMP/node$i/sshd.log" < /dev/null > /dev/null 2>&1 &
    SSHD_PIDS+=("$!")
done
for ((i = 0; i < NODE_COUNT; i++)); do
    for ((try = 0; ; try++)); do
        if ip netns exec "${NS[0]}" bash -c "exec 3<>/dev/tcp/$(addr "$i")/22" 2> /dev/null; then break; fi
        if ! alive "${SSHD_PIDS[$i]}" || (( try >= 100 )); then
            cat "$TMP/node$i/sshd.log" >&2 || true
            STAGE="node$i's sshd did not start"
            exit 1
        fi
        sleep 0.1
    done
    if [[ $(readlink "/proc/${SSHD_PIDS[$i]}/exe") != /usr/sbin/sshd ]]; then
        STAGE="pid ${SSHD_PIDS[$i]} is not node$i's sshd"; exit 1
    fi
done
# SSH from node0 to each node reaches that node (its hostname). A separate
# known_hosts keeps run-cluster.sh's first contact a first contact.
for ((i = 0; i < NODE_COUNT; i++)); do
    got=$(ip netns exec "${NS[0]}" ssh -F "$TMP/ssh_config" -o BatchMode=yes -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile="$TMP/probe_known_hosts" -o LogLevel=ERROR "node$i" hostname) || got="(ssh failed)"
    if [[ $got != "node$i" ]]; then STAGE="ssh node$i from node0 answered '$got', not node$i"; exit 1; fi
done
say "4 nodes up: node0..node3 at $NET.1-4 (namespaces $TAG-*), sshd on each, fake tmcc at $TMP/tmcc"

# --- self-test plants ------------------------------------------------------------
if (( SELF_TEST )); then
    STAGE="planting the self-test's faults"
    ip netns exec "${NS[2]}" sleep 300 < /dev/null > /dev/null 2>&1 &
    PLANT_PIDS+=("$!")
    say "self-test: planted pid ${PLANT_PIDS[0]} (sleep 300) on node2"
    if ip netns exec "${NS[3]}" timeout 10 bash -c "exec 3<>/dev/tcp/$OUTSIDE_TEST_ADDR/80" 2> /dev/null; then
        STAGE="self-test: node3 reached $OUTSIDE_TEST_ADDR:80, which must be impossible"; exit 1
    fi
    say "self-test: node3 tried $OUTSIDE_TEST_ADDR:80"
fi

# --- the run ---------------------------------------------------------------------
STAGE="running run-cluster.sh"
quoted_args=$(printf ' %q' 2 2 "${RUN_ARGS[@]+"${RUN_ARGS[@]}"}")
say "on node0: BATCHKV_TMCC=$TMP/tmcc BATCHKV_SSH_CONFIG=$TMP/ssh_config GOPROXY=off ./run-cluster.sh${quoted_args}"
run_rc=0
cd "$ROOT"
# In the background, so that a signal to this script is handled at once
# (bash runs traps only between foreground commands).
# shellcheck disable=SC2016 # "$@" expands in the inner sh
(timeout -k 30 "$TIMEOUT" ip netns exec "${NS[0]}" unshare --uts /bin/sh -c 'hostname node0 && exec "$@"' sh \
    env BATCHKV_TMCC="$TMP/tmcc" BATCHKV_SSH_CONFIG="$TMP/ssh_config" GOPROXY=off \
    ./run-cluster.sh 2 2 "${RUN_ARGS[@]+"${RUN_ARGS[@]}"}" < /dev/null 2>&1 | tee "$TMP/run.txt") &
RUN_PID=$!
wait "$RUN_PID" || run_rc=$?
RUN_PID=""

# --- checks (the same in both modes) -----------------------------------------------
problem() { echo "cloudlab-sim: check failed: $*" >&2; PROBLEMS+=("$*"); }

# check_run: run-cluster.sh's exit status, output and files. Sets LOG_DIR.
check_run() {
    PROBLEMS=()
    local out="$TMP/run.txt" f node i total
    if (( run_rc == 124 || run_rc == 137 )); then problem "run-cluster.sh ran over ${TIMEOUT}s"
    elif (( run_rc != 0 )); then problem "run-cluster.sh exited $run_rc"; fi
    grep -qx 'mode:         ssh' "$out" || problem "run-cluster.sh did not run in ssh (CloudLab) mode"
    grep -qx 'nodes:        node0 node1 node2 node3' "$out" ||
        problem "run-cluster.sh did not find the 4 nodes in the fake tmcc's two LANs: $(grep '^nodes:' "$out" || echo 'no nodes line')"
    grep -q '^tls:          on ' "$out" || problem "TLS was not on"
    grep -q '^total [1-9][0-9]* op/s$' "$out" || problem "no positive total op/s in run-cluster.sh's output"
    LOG_DIR=$(sed -n 's/^logs:  *//p' "$out" | head -n 1)
    if [[ -z $LOG_DIR || ! -d $LOG_DIR ]]; then problem "no log directory in run-cluster.sh's output"; return 1; fi
    if [[ $(readlink -f "$ROOT/logs/latest") != "$(readlink -f "$LOG_DIR")" ]]; then
        problem "logs/latest is $(readlink "$ROOT/logs/latest" || true), not this run's $LOG_DIR (another run at the same time?)"
    fi
    f="$LOG_DIR/report.txt"
    if [[ -s $f ]]; then
        for node in node0 node1; do
            grep -q "^$node median [1-9][0-9]* op/s$" "$f" || problem "report.txt has no positive median for $node"
        done
        total=$(sed -n 's/^total \([1-9][0-9]*\) op\/s$/\1/p' "$f")
        [[ -n $total ]] || problem "report.txt has no positive total"
        TOTAL=${total:-0}
    else
        problem "no report.txt"
    fi
    local want="client-node2.log client-node3.log server-node0.log server-node1.log" have
    have=$(for f in "$LOG_DIR"/server-*.log "$LOG_DIR"/client-*.log; do if [[ -e $f ]]; then basename "$f"; fi; done | sort | tr '\n' ' ')
    [[ $have == "$want " ]] || problem "logs are '${have% }', want '$want'"
    for f in $want; do [[ -s $LOG_DIR/$f ]] || problem "$f is empty or missing"; done
    # As on this machine: each server was stopped (its log ends with its own
    # shutdown) rather than cut off, and each client finished its run.
    for node in node0 node1; do
        grep -q 'msg="shutting down"' "$LOG_DIR/server-$node.log" 2> /dev/null ||
            problem "server-$node.log has no shutdown: the server was cut off, not stopped"
    done
    for node in node2 node3; do
        grep -q '^throughput [0-9]' "$LOG_DIR/client-$node.log" 2> /dev/null || problem "client-$node.log has no throughput line"
    done
    f="$LOG_DIR/util.csv"
    if [[ -s $f ]]; then
        [[ $(head -n 1 "$f") == node,role,second,ops_s,cpu_pct,rss_mib,rx_mib_s,tx_mib_s ]] || problem "util.csv's header is $(head -n 1 "$f")"
        for node in node0,server node1,server node2,client node3,client; do
            grep -q "^$node,[0-9]" "$f" || problem "util.csv has no row for ${node/,/ }"
        done
        have=$(tail -n +2 "$f" | cut -d, -f1 | sort -u | tr '\n' ' ')
        [[ $have == "node0 node1 node2 node3 " ]] || problem "util.csv's nodes are '${have% }'"
    else
        problem "no util.csv"
    fi
    f="$LOG_DIR/util.png"
    if [[ -s $f ]]; then
        [[ $(head -c 4 "$f" | od -An -tx1 | tr -d ' \n') == 89504e47 ]] || problem "util.png is not a PNG"
    else
        problem "no util.png"
    fi
    for f in ca.crt server0.crt server0.key server1.crt server1.key client.crt client.key; do
        [[ -s $LOG_DIR/certs/$f ]] || problem "no certs/$f"
    done
    if command -v openssl > /dev/null; then
        for i in 0 1; do
            f="$LOG_DIR/certs/server$i.crt"
            if [[ -s $f ]] && ! openssl x509 -in "$f" -noout -text 2> /dev/null | grep -q "DNS:node$i\b"; then
                problem "certs/server$i.crt does not name node$i"
            fi
        done
    fi
    # Each node was reached over SSH from node0 (the probe above comes from
    # node0 too, so count more than one login).
    for ((i = 0; i < NODE_COUNT; i++)); do
        local logins
        logins=$(grep -c "Accepted publickey for root from $NET.1 " "$TMP/node$i/sshd.log" || true)
        (( logins >= 2 )) || problem "node$i's sshd saw no login from run-cluster.sh ($logins in all)"
    done
    # run-cluster.sh removes the remote PID files when it stops the processes.
    have=$(ls /tmp/batchkv-"$(basename "$LOG_DIR")"-*.pid 2> /dev/null || true)
    [[ -z $have ]] || problem "PID files left: $have"
    (( ${#PROBLEMS[@]} == 0 ))
}

# check_leftovers: every node namespace (and the switch's) holds no process
# but its sshd while that runs; SSH sessions get GRACE seconds to close.
# Leftovers are shown, stopped by PID and listed in LEFTOVERS ("nodeI:PID").
check_leftovers() {
    LEFTOVERS=()
    local deadline=$((SECONDS + GRACE)) found i pid entry name ns
    while :; do
        found=()
        for ((i = 0; i <= NODE_COUNT; i++)); do
            if (( i == NODE_COUNT )); then name=switch; ns=$SWITCH_NS; else name=node$i; ns=${NS[$i]}; fi
            for pid in $(ip netns pids "$ns"); do
                if (( i < NODE_COUNT )) && [[ $pid == "${SSHD_PIDS[$i]:-}" ]]; then continue; fi
                found+=("$name:$pid")
            done
        done
        if (( ${#found[@]} == 0 )); then return 0; fi
        if (( SECONDS >= deadline )); then break; fi
        sleep 0.5
    done
    for entry in "${found[@]}"; do
        pid=${entry#*:}
        echo "cloudlab-sim: check failed: left running on ${entry%%:*}: pid $pid: $(cmdline "$pid")" >&2
        LEFTOVERS+=("$entry")
    done
    for entry in "${found[@]}"; do stop_pid "${entry#*:}"; done
    return 1
}

# check_outside: no node sent a packet to an address outside the cluster.
# Lists offenders in OUTSIDE ("nodeI:ADDR ADDR...").
check_outside() {
    OUTSIDE=()
    local i packets addrs
    for ((i = 0; i < NODE_COUNT; i++)); do
        packets=$(ip netns exec "${NS[$i]}" nft list counter inet cloudlab_sim outside | awk '$1 == "packets" {print $2}')
        if [[ ${packets:-x} == 0 ]]; then continue; fi
        addrs=$(for s in outside4 outside6; do
                    ip netns exec "${NS[$i]}" nft list set inet cloudlab_sim "$s" |
                        tr -d '\n\t' | sed -n 's/.*elements = { *\([^}]*\)}.*/\1/p'
                done | tr ',' ' ' | tr -s ' ')
        addrs=${addrs% }
        echo "cloudlab-sim: check failed: node$i sent ${packets:-?} packet(s) outside the cluster, to: ${addrs:-?}" >&2
        OUTSIDE+=("node$i:$addrs")
    done
    (( ${#OUTSIDE[@]} == 0 ))
}

# stop_sshds: stop every node's sshd by PID; the namespaces must then be empty.
stop_sshds() {
    local pid
    for pid in "${SSHD_PIDS[@]}"; do stop_pid "$pid"; done
    SSHD_PIDS=()
    check_leftovers
}

failures=()
STAGE="checking the run"
if ! check_run; then failures+=("$(joined "${PROBLEMS[@]}")"); fi
STAGE="checking for leftover processes"
leftover_rc=0; check_leftovers || leftover_rc=1
left_after_run=("${LEFTOVERS[@]+"${LEFTOVERS[@]}"}")
STAGE="checking for outside contacts"
outside_rc=0; check_outside || outside_rc=1
STAGE="stopping the sshds"
if ! stop_sshds; then failures+=("left running once the sshds stopped: ${LEFTOVERS[*]}"); fi
elapsed=$((SECONDS - START))

if (( SELF_TEST )); then
    want_left="node2:${PLANT_PIDS[0]}"
    if (( leftover_rc == 0 )); then
        failures+=("the leftover-process check missed the process planted on node2")
    elif [[ ${left_after_run[*]} != "$want_left" ]]; then
        failures+=("the leftover-process check reported '${left_after_run[*]}', want exactly '$want_left'")
    fi
    if (( outside_rc == 0 )); then
        failures+=("the outside-address check missed node3's attempt to reach $OUTSIDE_TEST_ADDR")
    elif [[ ${OUTSIDE[*]} != "node3:$OUTSIDE_TEST_ADDR" ]]; then
        failures+=("the outside-address check reported '${OUTSIDE[*]}', want exactly 'node3:$OUTSIDE_TEST_ADDR'")
    fi
    if ((${#failures[@]})); then STAGE="self-test: $(joined "${failures[@]}")"; exit 1; fi
    PASS_MSG="self-test: the leftover-process check caught the process planted on node2 (pid ${PLANT_PIDS[0]}), the outside-address check caught node3's attempt on $OUTSIDE_TEST_ADDR, every other check passed on a short run; ${elapsed}s"
else
    if (( leftover_rc )); then failures+=("left running after run-cluster.sh: ${left_after_run[*]}"); fi
    if (( outside_rc )); then failures+=("addresses outside the cluster contacted: ${OUTSIDE[*]}"); fi
    if ((${#failures[@]})); then STAGE=$(joined "${failures[@]}"); exit 1; fi
    PASS_MSG="run-cluster.sh 2 2 in CloudLab mode over SSH and TLS on 4 simulated nodes: total $TOTAL op/s; report, logs, util.csv, util.png in logs/$(basename "$LOG_DIR"); no process left, no outside address contacted; ${elapsed}s"
fi
STAGE="cleaning up"
exit 0
