package main

import (
	"fmt"
	"io"
	"strings"
)

// command is one kvsctl subcommand as `kvsctl help` explains it.
type command struct {
	name, args string
	summary    string // one line, for the list
	detail     string // what it does, how to read its output, its exit status
	example    string
}

// commands is every subcommand, in the order `kvsctl help` lists them.
var commands = []command{
	{name: "status", summary: "every replica of every shard: state, leader, term, log indexes",
		detail: `Asks every server for the shards it replicates and prints one row per
replica: its Raft state (Leader, Follower, Candidate), the leader it
knows, its term, its last, committed and applied log indexes, its
snapshot's index, its keys, and whether it is the shard's preferred
leader. A cluster without replication prints its servers only.`,
		example: "kvsctl -hosts 127.0.0.1:8080 status"},
	{name: "top", args: "[-once] [-interval 1s] [-no-shards]", summary: "a live table of every server's rates (like top); -once prints one",
		detail: `Every -interval, one row per server: ops/s, gets/s, puts/s, CPU %, resident
memory, network MiB/s, open connections, redirects/s and errors/s, then
(at RF>1) one row per shard: its leader, term, commit index and each
replica's lag. Ctrl-C quits. With -once it samples twice, -interval
apart, prints one table and exits: status 1 when no server answered.`,
		example: "kvsctl -hosts 127.0.0.1:8080 top -once"},
	{name: "verify", args: "[-within 30s]", summary: "compare every shard's replicas by the digest of their data at one applied index; exit 2 when any differ",
		detail: `Asks every server for the digest of each shard it replicates, waits
(up to -within) until a shard's replicas report the same applied index,
and prints one line per shard: agree, or the replicas whose digest
differs from the others'. A replica that differs holds damaged or
diverged data; restart it after removing its copy of the shard, or let
its start-up check rebuild it from its peers.`,
		example: "kvsctl -hosts 127.0.0.1:8080 verify"},
	{name: "get", args: "KEY", summary: "print KEY's value; exit status 1 when it is absent",
		detail: `Prints the value of KEY. An absent key prints nothing on stdout, says
so on stderr, and exits with status 1 (status 2 for any other error),
so that a script can tell the two apart.`,
		example: "kvsctl -hosts 127.0.0.1:8080 get user1 || echo absent"},
	{name: "put", args: "KEY VALUE", summary: "set KEY to VALUE",
		detail:  `Writes VALUE under KEY and prints "ok" once the cluster acknowledged it (at RF>1: once it is on a majority of the shard's replicas' disks).`,
		example: "kvsctl -hosts 127.0.0.1:8080 put user1 hello"},
	{name: "delete", args: "KEY", summary: "remove KEY",
		detail:  `Removes KEY and prints "ok" (also when it was absent).`,
		example: "kvsctl -hosts 127.0.0.1:8080 delete user1"},
	{name: "leader", args: "SHARD", summary: "print the address of SHARD's Raft leader",
		detail:  `Prints the host:port of the server leading SHARD (0 to shards-1; kvsctl status lists them), as the first replica that knows one says.`,
		example: "kvsctl -hosts 127.0.0.1:8080 leader 0"},
	{name: "probe", args: "[-for 10s] [-interval 10ms] SHARD", summary: "write to SHARD every -interval for -for, one line per write, then a summary",
		detail: `Writes one key of SHARD every -interval, each write with its own
deadline (-timeout), and prints a line per write:
    ok   UNIX_MS LATENCY_MS      the write was acknowledged, in LATENCY_MS
    fail UNIX_MS ERROR           it was not
after a title line (lines starting with # are comments). It stops after
-for (0: at Ctrl-C) and ends with a summary: writes, failures, latency
percentiles and the longest time without an acknowledged write, which
is how long the shard did not serve, as when its leader is killed
(benchmark-failover.sh measures failover so).`,
		example: "kvsctl -hosts 127.0.0.1:8080 probe -for 5s 0"},
	{name: "map", summary: "a replicated cluster's members, shard placement and epoch",
		detail: `Prints the shard map: its epoch (one more at every change), the members,
how many replicas each holds and how many shards it is the preferred
leader of, and each shard's replicas, preferred leader first. Needs a
cluster whose members can change (-rf above 1, -data-dir or -in-memory).`,
		example: "kvsctl -hosts 127.0.0.1:8080 map"},
	{name: "add-server", args: "ADDR", summary: "make a server started with -join a member, and move its share onto it",
		detail: `Makes ADDR, a server started with -join, a member of the cluster, then
moves its share of replicas and leaderships onto it while the cluster
serves. A member that does not answer within 3 s is down for the plan:
nothing moves to it, and the share comes off it first. Prints a line per
step and ends with what moved and how long it took; on failure it says
what completed and exits with status 2 (run it again, or rebalance, to
finish).`,
		example: "kvsserver -host 127.0.0.4 -port 8083 -join 127.0.0.1:8080 -data-dir run/kvsdata/new &\n  kvsctl -hosts 127.0.0.1:8080 add-server 127.0.0.4:8083"},
	{name: "remove-server", args: "ADDR", summary: "move every replica off ADDR (alive or dead) and drop it from the members",
		detail: `Moves every replica ADDR holds to the other members, then takes it out
of the map. ADDR may be dead. Nothing moves to a member that does not
answer within 3 s; if a replica could only go to such a member, it
refuses before it changes anything. Afterwards ADDR serves nothing and
may be stopped (kill its PID; run-cluster.sh writes its servers' PIDs
to logs/latest/pids/).`,
		example: "kvsctl -hosts 127.0.0.2:8081 remove-server 127.0.0.1:8080"},
	{name: "replace-server", args: "ADDR NEW", summary: "move every replica off ADDR (alive or dead) onto NEW, started with -join, and drop ADDR",
		detail: `Makes NEW, a server started with -join, a member, moves each replica
ADDR holds onto it, then takes ADDR out of the map. ADDR may be dead.
Each replica moves once, where add-server then remove-server may move
one off a live server and back; a cluster of exactly RF members, which
remove-server refuses, can replace a member so. NEW must hold no
replica of a shard ADDR holds. On failure, run it again to finish.`,
		example: "kvsserver -host 127.0.0.4 -port 8083 -join 127.0.0.2:8081 -data-dir run/kvsdata/new &\n  kvsctl -hosts 127.0.0.2:8081 replace-server 127.0.0.1:8080 127.0.0.4:8083"},
	{name: "move", args: "SHARD ADDR", summary: "move one replica of SHARD onto member ADDR",
		detail: `Moves one replica of SHARD onto ADDR, a member that holds none of it:
from the replica on the member that holds the most replicas overall.
If ADDR holds a replica of SHARD already there is nothing to move: it
says so and exits 0 (kvsctl map shows which shards it holds).`,
		example: "kvsctl -hosts 127.0.0.1:8080 move 3 127.0.0.4:8083"},
	{name: "rebalance", summary: "even out replicas and leaderships over the members",
		detail:  `Moves replicas and hands over leaderships until every member holds its share. A member that does not answer within 3 s gets none, and gives first while it holds more than the others. Prints its steps and what moved.`,
		example: "kvsctl -hosts 127.0.0.1:8080 rebalance"},
	{name: "certs", args: "init|issue ...", summary: "make a cluster CA and certificates (kvsctl help certs)",
		detail:  certsUsage,
		example: "kvsctl certs init -dir run/certs\n  kvsctl certs issue -dir run/certs -name node0 -role node -hosts 127.0.0.1"},
	{name: "help", args: "[COMMAND]", summary: "this list, or one command explained with an example",
		example: "kvsctl help move"},
}

// lookup returns the command named name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// writeOverview writes the usage line and the list of commands.
func writeOverview(w io.Writer) {
	fmt.Fprintln(w, "usage: kvsctl [-hosts h:p,...] [-timeout d] [-tls-ca FILE -tls-cert FILE -tls-key FILE] COMMAND [ARGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-36s %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "kvsctl help COMMAND explains one, with an example. Exit status: 0 done, 1 get found no such key, 2 an error.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "flags (before the command):")
}

// writeHelp writes one command's help.
func writeHelp(w io.Writer, c command) {
	fmt.Fprintf(w, "usage: kvsctl [flags] %s\n\n", strings.TrimSpace(c.name+" "+c.args))
	if c.detail != "" {
		fmt.Fprintln(w, c.detail)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "example:\n  %s\n", c.example)
}

// help runs `kvsctl help [COMMAND]`.
func help(args []string, stdout io.Writer, overview func()) error {
	switch len(args) {
	case 0:
		overview()
		return nil
	case 1:
		if c, ok := lookup(args[0]); ok {
			writeHelp(stdout, c)
			return nil
		}
	}
	return fmt.Errorf("help %s: no such command (kvsctl help lists them)", strings.Join(args, " "))
}

// wantsHelp reports whether a command's arguments ask for its help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}
