// Command kvsctl shows a cluster's shards and reads or writes keys by hand.
//
//	kvsctl -hosts 127.0.0.1:8080 status
//	kvsctl -hosts 127.0.0.1:8080 put user1 hello
//	kvsctl -hosts 127.0.0.1:8080 get user1
//	kvsctl -hosts 127.0.0.1:8080 delete user1
//	kvsctl -hosts 127.0.0.1:8080 leader 0
//	kvsctl -hosts 127.0.0.1:8080 probe 0
//	kvsctl -hosts 127.0.0.1:8080 top [-once] [-interval 1s] [-no-shards]
//	kvsctl -hosts 127.0.0.1:8080 map
//	kvsctl -hosts 127.0.0.1:8080 add-server 127.0.0.1:8083
//	kvsctl -hosts 127.0.0.1:8080 remove-server 127.0.0.1:8081
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
// map prints a replicated cluster's shard map and its epoch. add-server
// makes a server started with -join a member and moves its share of
// replicas and leaders onto it; remove-server moves every replica off a
// server (alive or dead) so it can be stopped; move moves one replica of
// a shard; rebalance evens out replicas and leaders. Each prints a line
// per step and ends with what moved and how long it took (package
// membership).
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
	"github.com/batchkv/batchkv/internal/tlsflags"
	"github.com/batchkv/batchkv/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kvsctl:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kvsctl", flag.ContinueOnError)
	hosts := fs.String("hosts", "127.0.0.1:8080", "comma-separated host:port of servers; the first that answers tells the layout")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of each command (of each write, for probe)")
	interval := fs.Duration("interval", 10*time.Millisecond, "probe: pause between writes")
	tf := tlsflags.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: kvsctl [-hosts h:p,...] [-timeout d] [-tls-ca F -tls-cert F -tls-key F] status | top [-once] | get KEY | put KEY VALUE | delete KEY | leader SHARD | probe SHARD")
		fmt.Fprintln(fs.Output(), "       kvsctl [-hosts ...] map | add-server ADDR | remove-server ADDR | move SHARD ADDR | rebalance")
		fmt.Fprintln(fs.Output(), "       kvsctl certs init|issue ...   (kvsctl certs for help)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		fs.Usage()
		return errors.New("no command")
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
	case "map", "add-server", "remove-server", "move", "rebalance":
		return membershipCmd(cmd, admin, strings.Split(*hosts, ","), max(*timeout, 10*time.Second), stdout)
	}
	cfg, err := discover(admin, strings.Split(*hosts, ","), *timeout)
	if err != nil {
		return err
	}
	switch {
	case cmd[0] == "status" && len(cmd) == 1:
		return status(admin, cfg, *timeout, stdout)
	case cmd[0] == "top":
		return top(cmd[1:], admin, cfg, *timeout, stdout)
	case (cmd[0] == "leader" || cmd[0] == "probe") && len(cmd) == 2:
		sh, err := strconv.Atoi(cmd[1])
		if err != nil || sh < 0 || sh >= max(cfg.Shards, 1) {
			return fmt.Errorf("%s %q: not a shard of this cluster (%d shards)", cmd[0], cmd[1], cfg.Shards)
		}
		if cmd[0] == "leader" {
			return leader(admin, cfg, *timeout, sh, stdout)
		}
		return probe(cfg, *timeout, sh, *interval, stdout)
	case cmd[0] == "get" && len(cmd) == 2, cmd[0] == "put" && len(cmd) == 3, cmd[0] == "delete" && len(cmd) == 2:
		return keyOp(cfg, *timeout, cmd, stdout)
	}
	fs.Usage()
	return fmt.Errorf("bad command %q", strings.Join(cmd, " "))
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
	fmt.Fprintf(stdout, "%d servers, %d shards, RF %d\n", len(cfg.Servers), cfg.Shards, cfg.Replicas)
	var rows []row
	var disks []serverDisk
	for _, srv := range cfg.Servers {
		st, err := admin.Status(srv, wire.StatusRequest{}, timeout)
		if err != nil {
			fmt.Fprintf(stdout, "%s: unreachable (%v)\n", srv, err)
			continue
		}
		disks = append(disks, serverDisk{server: srv, disk: st.Disk})
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
			fmt.Fprintln(stdout, "(not found)")
			return nil
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
