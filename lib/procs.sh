# shellcheck shell=bash
# The processes a benchmark script starts, kept by PID so that it stops
# exactly those: procs_add each one, and call procs_stop between runs and
# in an EXIT trap. Also waits for a port and reads a process's CPU time.

PIDS=()

# procs_add PID: remember a process to stop.
procs_add() { PIDS+=("$1"); }

# procs_stop: stop (SIGTERM) and reap every process added, then forget them.
procs_stop() {
    local pid
    for pid in "${PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    PIDS=()
}

# listening PORT: whether something listens on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# port_free PORT: exit if something already listens on 127.0.0.1:PORT (a
# server left from another run would be the one measured).
port_free() {
    if listening "$1"; then
        echo "something already listens on 127.0.0.1:$1; stop it, or choose another port (see --help)" >&2
        exit 1
    fi
}

# wait_port PORT: until something listens on 127.0.0.1:PORT (10 s at most).
wait_port() {
    local _
    for _ in $(seq 100); do
        listening "$1" && return 0
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$1 after 10 s" >&2
    return 1
}

# cpu_ticks PID: the user and system clock ticks of a live process (see
# CLOCK_TICKS).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# shellcheck disable=SC2034 # read by the scripts that source this file
CLOCK_TICKS=$(getconf CLK_TCK)
