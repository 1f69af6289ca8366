// Command kvsctl shows a cluster's shards and reads or writes keys by hand.
//
//	kvsctl -hosts 127.0.0.1:8080 status
//	kvsctl -hosts 127.0.0.1:8080 put user1 hello
//	kvsctl -hosts 127.0.0.1:8080 get user1
//	kvsctl -hosts 127.0.0.1:8080 delete user1
//	kvsctl -hosts 127.0.0.1:8080 leader 0
//	kvsctl -hosts 127.0.0.1:8080 probe [-for 10s] 0
//	kvsctl -hosts 127.0.0.1:8080 top [-once] [-interval 1s] [-no-shards]
//	kvsctl -hosts 127.0.0.1:8080 verify [-within 30s]
//	kvsctl -hosts 127.0.0.1:8080 map
//	kvsctl -hosts 127.0.0.1:8080 add-server 127.0.0.1:8083
//	kvsctl -hosts 127.0.0.1:8080 remove-server 127.0.0.1:8081
//	kvsctl -hosts 127.0.0.1:8080 replace-server 127.0.0.1:8081 127.0.0.1:8084
//	kvsctl -hosts 127.0.0.1:8080 move 3 127.0.0.1:8083
//	kvsctl -hosts 127.0.0.1:8080 rebalance
//
// status asks every server for its view of the shards it replicates and
// prints one line per replica: its state, the leader it knows, its term,
// and its last, committed and applied log indexes. get, put and delete go
// through the client library, which finds each shard's leader. top is a
// live view of every server at once, refreshed every second: ops/s, CPU,
// memory, network, connections and errors per node, and at RF>1 each
// shard's leader, term and replica lag; -once prints one table.
//
// verify compares the replicas of every shard: it asks each server for
// its replicas' content digests until each shard's replicas have applied
// the same index, prints a line per shard, and exits non-zero if a
// replica differs from its peers (damaged data replayed, or a bug) or a
// shard's replicas never reached the same index within -within (a
// cluster under steady writes may not settle: verify it between loads).
//
// map prints a replicated cluster's shard map and its epoch. add-server
// makes a server started with -join a member and moves its share of
// replicas and leaders onto it; remove-server moves every replica off a
// server (alive or dead) so it can be stopped; replace-server moves every
// replica of one server onto a new one; move moves one replica of
// a shard; rebalance evens out replicas and leaders. Each prints a line
// per step and ends with what moved and how long it took (package
// membership).
//
// kvsctl help lists the commands; kvsctl help COMMAND explains one with
// an example. The exit status is 0 when the command did what was asked, 1
// when get found no such key, and 2 for any error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/tlsflags"
	"github.com/batchkv/batchkv/wire"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, cli.ErrHelpShown) {
		fmt.Fprintln(os.Stderr, "kvsctl:", tlsflags.Hint(err))
	}
	os.Exit(exitStatus(err))
}

// errNotFound is get's answer for an absent key: exit status 1, as grep
// without a match.
var errNotFound = errors.New("not found")

// exitStatus is 0 when the command did what was asked, 1 when get found
// no such key, and 2 for any error.
func exitStatus(err error) int {
	switch {
	case err == nil, errors.Is(err, cli.ErrHelpShown):
		return 0
	case errors.Is(err, errNotFound):
		return 1
	}
	return 2
}

// argCounts is how many arguments each command takes after its name.
var argCounts = map[string]int{"status": 0, "get": 1, "put": 2, "delete": 1, "leader": 1, "map": 0,
	"add-server": 1, "remove-server": 1, "replace-server": 2, "move": 2, "rebalance": 0}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kvsctl", flag.ContinueOnError)
	hosts := fs.String("hosts", "127.0.0.1:8080", "comma-separated `host:port` of servers; the first that answers tells the layout")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of each command (of each write, for probe)")
	interval := fs.Duration("interval", 10*time.Millisecond, "probe: pause between writes (also probe -interval)")
	tf := tlsflags.Register(fs)
	overview := func(w io.Writer) {
		writeOverview(w)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fs.Usage = func() { overview(fs.Output()) }
	if err := cli.Parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		overview(stderr)
		return errors.New("no command given (kvsctl help lists them)")
	}
	if cmd[0] == "help" {
		return help(cmd[1:], stdout, func() { overview(stdout) })
	}
	c, known := lookup(cmd[0])
	if !known {
		return fmt.Errorf("%q is not a command (kvsctl help lists them)", cmd[0])
	}
	if wantsHelp(cmd[1:]) && cmd[0] != "certs" {
		writeHelp(stdout, c)
		return cli.ErrHelpShown
	}
	if n, fixed := argCounts[cmd[0]]; fixed && len(cmd)-1 != n {
		return fmt.Errorf("usage: kvsctl %s %s (kvsctl help %s explains it)", c.name, c.args, c.name)
	}
	if cmd[0] == "certs" {
		return certs(cmd[1:], stdout)
	}
	id, err := tf.Load()
	if err != nil {
		return err
	}
	var admin client.Admin
	if id != nil {
		admin.TLS = id.ClientConfig()
	}
	switch cmd[0] {
	case "map", "add-server", "remove-server", "replace-server", "move", "rebalance":
		return membershipCmd(cmd, admin, strings.Split(*hosts, ","), max(*timeout, 10*time.Second), stdout)
	}
	cfg, err := discover(admin, strings.Split(*hosts, ","), *timeout)
	if err != nil {
		return err
	}
	switch cmd[0] {
	case "status":
		return status(admin, cfg, *timeout, stdout)
	case "verify":
		vfs := flag.NewFlagSet("verify", flag.ContinueOnError)
		within := vfs.Duration("within", 30*time.Second, "how long to wait for each shard's replicas to apply the same index")
		if err := cli.Parse(vfs, cmd[1:], stdout, stderr); err != nil {
			return err
		}
		return verify(admin, cfg, *timeout, *within, stdout)
	case "top":
		return top(cmd[1:], admin, cfg, *timeout, stdout)
	case "probe":
		return probe(cmd[1:], cfg, *timeout, *interval, stdout)
	case "leader":
		sh, err := shardArg(cmd[1], cfg)
		if err != nil {
			return err
		}
		return leader(admin, cfg, *timeout, sh, stdout)
	}
	return keyOp(cfg, *timeout, cmd, stdout)
}

// shardArg parses a shard number of the cluster cfg describes.
func shardArg(arg string, cfg client.Config) (int, error) {
	sh, err := strconv.Atoi(arg)
	if err != nil || sh < 0 || sh >= max(cfg.Shards, 1) {
		if cfg.Shards == 0 {
			return 0, fmt.Errorf("shard %q: this cluster is not replicated: it has no shards (start the servers with -rf 3, or -in-memory)", arg)
		}
		return 0, fmt.Errorf("shard %q: this cluster has shards 0 to %d", arg, cfg.Shards-1)
	}
	return sh, nil
}

func discover(admin client.Admin, hosts []string, timeout time.Duration) (client.Config, error) {
	var errs []error
	for _, h := range hosts {
		cfg, err := admin.Discover(h, timeout)
		if err == nil {
			return cfg, nil
		}
		errs = append(errs, err)
	}
	return client.Config{}, fmt.Errorf("no server answered: %w", errors.Join(errs...))
}

func status(admin client.Admin, cfg client.Config, timeout time.Duration, stdout io.Writer) error {
	if cfg.Shards == 0 {
		fmt.Fprintf(stdout, "not replicated: %d servers, keys placed by consistent hashing (%s)\n", len(cfg.Servers), strings.Join(cfg.Servers, ","))
		return nil
	}
	fmt.Fprintf(stdout, "%d servers, %d shards, RF %d\n", len(cfg.Servers), cfg.Shards, cfg.RF)
	var rows []row
	var disks []serverDisk
	for _, srv := range cfg.Servers {
		st, err := admin.Status(srv, wire.StatusRequest{}, timeout)
		if err != nil {
			fmt.Fprintf(stdout, "%s: unreachable (%v)\n", srv, err)
			continue
		}
		disks = append(disks, serverDisk{server: srv, disk: st.Disk, stores: st.Stores})
		for _, s := range st.Shards {
			rows = append(rows, row{server: srv, ShardStatus: s})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Shard != rows[j].Shard {
			return rows[i].Shard < rows[j].Shard
		}
		return rows[i].server < rows[j].server
	})
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SHARD\tREPLICA\tSTATE\tLEADER\tTERM\tLAST\tCOMMIT\tAPPLIED\tSNAPSHOT\tKEYS\tPREFERRED")
	for _, r := range rows {
		pref := ""
		if len(r.Replicas) > 0 && r.Replicas[0] == r.server {
			pref = "yes"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Shard, r.server, r.State, r.Leader,
			r.Term, r.LastIndex, r.Commit, r.Applied, r.Snapshot, r.Keys, pref)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return writeDisks(stdout, disks)
}

type row struct {
	server string
	wire.ShardStatus
}

func keyOp(cfg client.Config, timeout time.Duration, cmd []string, stdout io.Writer) error {
	cl, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	switch cmd[0] {
	case "get":
		v, err := cl.Get(ctx, cmd[1])
		if errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("get %q: %w", cmd[1], errNotFound)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, v)
	case "put":
		if err := cl.Put(ctx, cmd[1], cmd[2]); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "ok")
	case "delete":
		if err := cl.Delete(ctx, cmd[1]); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "ok")
	}
	return nil
}
