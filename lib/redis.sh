# shellcheck shell=bash
# Redis for the scripts that compare batchkv with it (benchmark-latency.sh,
# benchmark-peers.sh, benchmark-resp.sh): install it from Debian's packages
# when missing, start redis-server on 127.0.0.1 with persistence off, load
# the keys redis-benchmark -r draws from, and one redis-benchmark run with
# the CPU it and the server used. Sources lib/procs.sh: the servers started
# are stopped by procs_stop.

# shellcheck source=lib/procs.sh
source "$(dirname "${BASH_SOURCE[0]}")/procs.sh"

# redis_install PKG...: install the Debian packages PKG (redis-server
# brings redis-benchmark and redis-cli) if redis-server, redis-benchmark or
# redis-cli is missing, or, when PKG names python3-redis, if the system's
# python3 cannot import redis.
redis_install() {
    local missing=false
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null ||
        ! command -v redis-cli >/dev/null; then
        missing=true
    fi
    if [[ " $* " == *" python3-redis "* ]]; then
        { /usr/bin/python3 -c 'import redis' || python3 -c 'import redis'; } 2>/dev/null || missing=true
    fi
    $missing || return 0
    local names=$1 first
    if (($# > 1)); then
        first=$(IFS=,; echo "${*:1:$#-1}")
        names="${first//,/, } and ${!#}"
    fi
    echo "installing $names from Debian's packages"
    local sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "$@"
}

# redis_wait PORT: until a server on 127.0.0.1:PORT answers redis-cli's
# PING (10 s at most). batchkv's port answers it too.
redis_wait() {
    local _
    for _ in $(seq 100); do
        redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nothing answers PING on 127.0.0.1:$1 after 10 s" >&2
    return 1
}

# redis_start PORT LOG: start redis-server on 127.0.0.1:PORT, persistence
# off, its output to LOG; sets REDIS_PID (also added to procs) and waits
# until it answers.
redis_start() {
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no > "$2" 2>&1 &
    REDIS_PID=$!
    procs_add "$REDIS_PID"
    redis_wait "$1"
}

# redis_load PORT N: SET the N keys redis-benchmark -r N draws from
# (key:000000000000 ..) to 128-byte values, through redis-cli --pipe,
# whose report goes to stdout.
redis_load() {
    awk -v n="$2" 'BEGIN { v = ""; for (i = 0; i < 128; i++) v = v "v";
        for (i = 0; i < n; i++) { k = sprintf("key:%012d", i);
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$128\r\n%s\r\n", length(k), k, v } }' |
        redis-cli -p "$1" --pipe
}

# redis_bench SERVER_PID PORT TEST ARGS...: one run of redis-benchmark -h
# 127.0.0.1 -p PORT -t TEST ARGS --csv against the server SERVER_PID. Sets
# BENCH_RPS, BENCH_P50 and BENCH_P99 (ms) from its CSV, and BENCH_SERVER_CPU
# and BENCH_GEN_CPU, the CPU % of the server and of redis-benchmark over
# the run (100 = one core). Exits if redis-benchmark gives no figure.
redis_bench() {
    local pid=$1 port=$2 test=$3
    shift 3
    local c0 c1 t0 t1 out line child
    c0=$(cpu_ticks "$pid"); t0=$(date +%s.%N)
    # times prints the shell's and then its children's user/system seconds.
    out=$( { redis-benchmark -h 127.0.0.1 -p "$port" -t "$test" "$@" --csv; times; } 2>&1 )
    t1=$(date +%s.%N); c1=$(cpu_ticks "$pid")
    line=$(echo "$out" | awk -F'"' -v t="${test^^}" '$2 == t {print $4, $10, $14}')
    [[ -n $line ]] || { echo "redis-benchmark gave no figure:"; echo "$out"; exit 1; } >&2
    child=$(echo "$out" | tail -1 | awk '{gsub(/[ms]/, " "); print $1*60 + $2 + $3*60 + $4}')
    # shellcheck disable=SC2034 # read by the script that sources this file
    read -r BENCH_RPS BENCH_P50 BENCH_P99 <<< "$line"
    # shellcheck disable=SC2034 # read by the script that sources this file
    read -r BENCH_SERVER_CPU BENCH_GEN_CPU < <(awk -v c0="$c0" -v c1="$c1" -v hz="$CLOCK_TICKS" \
        -v t0="$t0" -v t1="$t1" -v child="$child" \
        'BEGIN { w = t1 - t0; printf "%.3f %.3f\n", (c1 - c0) / hz / w * 100, child / w * 100 }')
}
