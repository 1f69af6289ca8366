// Command kvsserver runs one server of the store.
//
//	kvsserver -port 8080
//	kvsserver -port 8080 -peers node0:8080,node1:8080 -self node1:8080
//	kvsserver -port 8080 -peers n0:8080,n1:8080,n2:8080 -rf 3 -data-dir /var/lib/kvs
//	kvsserver -host n3 -port 8080 -join n0:8080 -data-dir /var/lib/kvs   (then kvsctl add-server n3:8080)
//	kvsserver -port 8080 -peers n0:8080,n1:8080 -shards 16 -in-memory    (memory only; shards can move)
//
// Every second it prints get/s, put/s and ops/s as the course skeleton's
// server does, plus its CPU %, resident memory and network rates.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/sysmem"
	"github.com/batchkv/batchkv/internal/tlsflags"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/memlimit"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/replica/logbound"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills at once (Go's default).
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, cli.ErrHelpShown) {
		fmt.Fprintln(os.Stderr, "kvsserver:", err)
	}
	os.Exit(cli.Exit(err))
}

const usageHead = `usage: kvsserver [flags]

  kvsserver                                   one server on 127.0.0.1:8080, memory only
  kvsserver -port 8081 -peers 127.0.0.1:8080,127.0.0.1:8081
                                              one of several servers sharing the keys
  kvsserver -host 127.0.0.2 -port 8081 -peers 127.0.0.1:8080,127.0.0.2:8081,127.0.0.3:8082 -rf 3
                                              one of three replicas of every shard (start all three)
  kvsserver -host 127.0.0.4 -port 8083 -join 127.0.0.1:8080 -data-dir run/kvsdata/new
                                              a new server for a running replicated cluster
                                              (then: kvsctl add-server 127.0.0.4:8083)
  ./run-cluster.sh 3 1 "-rf 3"                does the above for you, with a load client

flags:
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kvsserver", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	port := fs.Int("port", 8080, "TCP port to listen on")
	host := fs.String("host", "127.0.0.1", "address to listen on; a non-loopback one (or empty: all interfaces) needs TLS, or -insecure")
	peers := fs.String("peers", "", "comma-separated host:port of every server, this one included (empty: a single server owning every key)")
	self := fs.String("self", "", "this server's entry in -peers (default: the entry ending in :<port>, if only one does), or with -join its address as others reach it (default: -host:-port)")
	join := fs.String("join", "", "host:port of any member of a running replicated cluster to join, in place of -peers (then kvsctl add-server this server); its shards, -rf and map come from the cluster")
	vnodes := fs.Int("vnodes", 0, fmt.Sprintf("virtual nodes per server on the ring; clients must use the same (0: the default, %d)", ring.DefaultVirtualNodes))
	report := fs.Duration("report", time.Second, "interval of the rate report (0: no report)")
	stopWithin := fs.Duration("stop-within", defaultStopWithin, "on SIGTERM or SIGINT, exit this long after the signal even if closing has not finished, after writing every goroutine's stack to the log (0: wait for the close)")
	frameTimeout := fs.Duration("frame-timeout", kvs.DefaultFrameTimeout, "close a connection whose request frame stalls this long")
	storeName := fs.String("store", store.DefaultKind, "store implementation: "+strings.Join(store.Kinds, " or "))
	admin := fs.String("admin", "", "host:port of the admin HTTP server with /metrics (Prometheus) and /debug/pprof, unauthenticated (empty: none; empty host: 127.0.0.1)")
	insecure := fs.Bool("insecure", false, "allow listening on a non-loopback address without TLS: anyone who reaches the port can then read, write and speak Raft")
	tf := tlsflags.Register(fs)
	var lim kvs.Limits
	defLim := kvs.DefaultLimits()
	fs.DurationVar(&lim.IdleTimeout, "idle-timeout", 0, "close a connection with nothing in flight and no byte moved this long (0: "+defLim.IdleTimeout.String()+")")
	fs.IntVar(&lim.MaxConns, "max-conns", 0, fmt.Sprintf("open connections in total (0: %d)", defLim.MaxConns))
	fs.IntVar(&lim.MaxConnsPerHost, "max-conns-per-host", 0, fmt.Sprintf("open connections from one IP address (0: %d)", defLim.MaxConnsPerHost))
	fs.Int64Var(&lim.ReplyBudget, "reply-budget", 0, fmt.Sprintf("bytes of values in replies not yet written, server-wide (0: %d MiB, or a quarter of -max-memory's heap share if less)", defLim.ReplyBudget>>20))
	fs.Int64Var(&lim.RequestBudget, "request-budget", 0, fmt.Sprintf("bytes of requests not yet answered (their ops and results), server-wide; no connection reads on while over it (0: %d MiB, %d MiB with replication, or a quarter of -max-memory's heap share if less)", defLim.RequestBudget>>20, kvs.ReplicatedRequestBudget>>20))
	maxMemory := fs.String("max-memory", "auto", "bound on the server's memory, as bytes or with a unit (512MiB, 4GiB): the Go heap takes a quarter (at least 128 MiB) and bounds the reply budgets, 32 MiB is kept for the executable, and the stores may take the rest, writes past that refused with an OOM error while reads and deletes go on; the Go runtime's memory limit (GOMEMLIMIT, unless set) follows what the stores and the 32 MiB leave, and while the live heap is small the collector's goal is kept at a quarter of the heap's share, at most 64 MiB (GOGC, unless set); auto: 3/4 of the machine's memory (or its cgroup's limit); 0: no bound")
	rf := fs.Int("rf", 1, "replication factor: each shard is a Raft group on this many servers (1: memory-only, unless -data-dir)")
	shards := fs.Int("shards", 0, "shards of a replicated cluster (0: one per server); clients learn it from the servers")
	inMemory := fs.Bool("in-memory", false, "at -rf 1, without -data-dir: make each shard a one-replica Raft group kept in memory, in place of the fixed ring, so that shards can move between servers (kvsctl add-server, remove-server, move); a server keeps nothing across a restart: started again with its -peers or -join, it serves the shards the cluster's map places on it again, empty")
	dataDir := fs.String("data-dir", "", "directory of the Raft logs and snapshots; makes the server durable (default with -rf > 1: kvsdata/<host_port>)")
	raftVia := fs.String("raft-via", "", "comma-separated peer=proxy pairs: dial a peer's Raft traffic through proxy host:port instead (fault experiments)")
	noSync := fs.Bool("unsafe-nosync", false, "do not fsync the Raft log (experiments only: an acknowledged write may be lost on power failure)")
	raftLogBytes := fs.String("raft-log-bytes", "auto", "bound on the bytes of the Raft logs in -data-dir, as bytes or with a unit (512MiB, 4GiB): a shard whose entries are large snapshots and trims its log sooner, so that the logs together keep about this much; auto: a quarter of the data dir's file system; 0: by entry counts only (-raft-snapshot-entries, -raft-trailing-logs)")
	raftLog := fs.String("raft-log", string(raftstore.LogWAL), "how each shard keeps its Raft log in -data-dir: wal (segment files, one fsync per append) or bolt (a BoltDB file); a data dir keeps the format it was made with")
	timing := replica.DefaultTiming()
	fs.DurationVar(&timing.HeartbeatTimeout, "raft-heartbeat", timing.HeartbeatTimeout, "Raft heartbeat timeout: a follower that hears nothing from its leader this long calls an election")
	fs.DurationVar(&timing.ElectionTimeout, "raft-election", timing.ElectionTimeout, "Raft election timeout of a candidate")
	fs.DurationVar(&timing.LeaderLeaseTimeout, "raft-lease", timing.LeaderLeaseTimeout, "Raft leader lease: a leader that hears from no majority this long steps down")
	fs.Uint64Var(&timing.SnapshotThreshold, "raft-snapshot-entries", timing.SnapshotThreshold, "log entries between snapshots of a shard")
	fs.DurationVar(&timing.SnapshotInterval, "raft-snapshot-interval", timing.SnapshotInterval, "how often a shard checks whether to snapshot")
	fs.Float64Var(&timing.SnapshotShare, "raft-snapshot-share", timing.SnapshotShare, "share of the time a shard writing a snapshot may spend on it, pausing between chunks so the load keeps the CPU (1: as fast as it can)")
	fs.Uint64Var(&timing.TrailingLogs, "raft-trailing-logs", timing.TrailingLogs, "log entries a shard keeps after a snapshot; a follower further behind is sent the snapshot")
	readMode := fs.String("read-mode", kvs.ReadBarrier, "with -rf > 1: how reads are served: barrier (a log entry per batch of reads; no clock assumption) or lease (a leader serves them for -read-lease after an entry commits, with no log entry; assumes the servers' clocks run at rates within 50% of each other, and replaces a crashed leader after about 700 ms instead of 200 ms)")
	fs.DurationVar(&timing.CommitWindow, "raft-commit-window", timing.CommitWindow, "under heavy load, how long a shard's leader holds a Raft entry to append it with those that follow (group commit; 0: none)")
	fs.DurationVar(&timing.LeaseRead, "read-lease", timing.LeaseRead, "with -read-mode lease: how long a leader serves reads after an entry of its term commits")
	if err := cli.Parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (every setting is a flag: kvsserver -help lists them)", fs.Args())
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// Data dirs, logs and snapshots hold the keys and values in clear:
	// readable by this user only.
	syscall.Umask(0o077)
	id, err := tf.Load()
	if err != nil {
		return err
	}
	logBytes, err := parseRaftLogBytes(*raftLogBytes)
	if err != nil {
		return err
	}
	logFormat, err := raftstore.ParseLogFormat(*raftLog)
	if err != nil {
		return fmt.Errorf("-raft-log: %w", err)
	}
	st, ok := store.New(*storeName)
	if !ok {
		return fmt.Errorf("-store %q: want one of %v", *storeName, store.Kinds)
	}
	if *storeName == store.DefaultKind {
		st = nil // the server makes its own Arenas, counted for -max-memory
	}
	maxMem, err := parseMaxMemory(*maxMemory)
	if err != nil {
		return err
	}
	cfg := kvs.Config{VirtualNodes: *vnodes, FrameTimeout: *frameTimeout, Logger: log, Store: st, MaxMemory: maxMem,
		RF: *rf, Shards: *shards, DataDir: *dataDir, InMemory: *inMemory, NoSync: *noSync, RaftLog: logFormat, RaftLogBytes: logBytes, Raft: timing, ReadMode: *readMode, Identity: id, Limits: lim}
	cfg.GoMemoryLimit = os.Getenv("GOMEMLIMIT") == ""
	if *raftVia != "" {
		via, err := parseVia(*raftVia)
		if err != nil {
			return err
		}
		cfg.DialRaft = func(addr string, timeout time.Duration) (net.Conn, error) {
			if p, ok := via[addr]; ok {
				addr = p
			}
			return transport.DialTCP(addr, timeout)
		}
	}
	if *rf < 1 {
		return fmt.Errorf("-rf %d: want at least 1", *rf)
	}
	if *join != "" {
		if *peers != "" {
			return errors.New("-join and -peers: give one (-join takes the members from the cluster)")
		}
		cfg.Join, cfg.Self = *join, *self
	}
	if *peers != "" {
		cfg.Peers = strings.Split(*peers, ",")
		cfg.Self = *self
		if cfg.Self == "" {
			var err error
			if cfg.Self, err = guessSelf(cfg.Peers, *port); err != nil {
				return err
			}
		}
	}
	if err := checkEnoughPeers(*rf, cfg.Peers, *join); err != nil {
		return err
	}
	if cfg.Replicated() {
		if cfg.Self == "" {
			cfg.Self = net.JoinHostPort(defaultHost(*host), strconv.Itoa(*port))
		}
		if cfg.DataDir == "" && !cfg.InMemory {
			cfg.DataDir = filepath.Join("kvsdata", strings.NewReplacer(":", "_", "/", "_").Replace(cfg.Self))
		}
		timingArgs := []any{"data_dir", cfg.DataDir, "in_memory", cfg.InMemory,
			"heartbeat", timing.HeartbeatTimeout, "election", timing.ElectionTimeout, "lease", timing.LeaderLeaseTimeout, "read_mode", *readMode}
		if cfg.Join != "" {
			// The cluster's RF and shards are known once it answers.
			log.Info("joining", append([]any{"through", cfg.Join, "self", cfg.Self}, timingArgs...)...)
		} else {
			log.Info("replicated", append([]any{"rf", cfg.RF, "shards", cfg.Shards}, timingArgs...)...)
		}
		if cfg.NoSync {
			log.Warn("WARNING: -unsafe-nosync: the Raft log is not fsynced; acknowledged writes can be lost if a majority of a shard's machines crash")
		}
	}
	if err := checkExposure(*host, id, *insecure, log); err != nil {
		return err
	}
	if err := checkCertNames(id, cfg.Self, *host, tf.Cert); err != nil {
		return err
	}
	// Listen first: a port in use fails here, before any Raft group starts.
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	srv, err := kvs.New(cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if cfg.Join != "" {
		l := srv.Layout()
		log.Info("joined", "through", cfg.Join, "rf", l.Replicas, "shards", l.Shards, "servers", len(l.Servers), "epoch", l.Epoch,
			"next", "kvsctl -hosts "+cfg.Join+" add-server "+cfg.Self)
	}
	log.Info("serving", "addr", ln.Addr().String(), "peers", cfg.Peers, "self", cfg.Self, "store", *storeName,
		"max_memory", maxMem)
	if *admin != "" {
		_, stopAdmin, err := serveAdmin(adminAddr(*admin), srv.Metrics(), log)
		if err != nil {
			_ = ln.Close()
			_ = srv.Close()
			return err
		}
		defer stopAdmin()
	}
	done := make(chan struct{})
	defer close(done)
	if *report > 0 {
		go stats.NewReporter(srv.Stats(), stdout).Run(done, *report)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return closeWithin(srv.Close, *stopWithin, stderr)
	case err := <-errc:
		_ = closeWithin(srv.Close, *stopWithin, stderr)
		return err
	}
}

// errExposed says a server would listen beyond this machine without TLS.
var errExposed = errors.New("refusing to listen on a non-loopback address without TLS: give -tls-ca, -tls-cert and -tls-key (kvsctl certs makes them), or -insecure to accept that anyone who reaches the port owns the cluster")

// checkExposure refuses a plaintext server on an address other machines
// can reach, unless insecure, and then warns.
func checkExposure(host string, id *auth.Identity, insecure bool, log *slog.Logger) error {
	if id != nil || isLoopback(host) {
		return nil
	}
	if !insecure {
		return fmt.Errorf("-host %q: %w", host, errExposed)
	}
	log.Warn("WARNING: -insecure: listening without TLS on a non-loopback address; anyone who reaches the port can read and write every key and speak Raft", "host", host)
	return nil
}

// isLoopback reports whether every address host names is a loopback
// address. Empty (all interfaces) is not.
func isLoopback(host string) bool {
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// adminAddr binds an admin address with no host to loopback: the admin
// server has no authentication.
func adminAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// defaultHost is the host a lone replicated server advertises when it
// listens on every interface.
func defaultHost(h string) string {
	if h == "" || h == "0.0.0.0" || h == "::" {
		return "127.0.0.1"
	}
	return h
}

// parseVia parses -raft-via: peer=proxy pairs, comma-separated.
func parseVia(s string) (map[string]string, error) {
	via := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		peer, proxy, ok := strings.Cut(pair, "=")
		if !ok || peer == "" || proxy == "" {
			return nil, fmt.Errorf("-raft-via %q: want peer=proxy pairs", pair)
		}
		via[peer] = proxy
	}
	return via, nil
}

// guessSelf picks the one peer whose port is ours.
func guessSelf(peers []string, port int) (string, error) {
	var found []string
	for _, p := range peers {
		if _, pp, err := net.SplitHostPort(p); err == nil && pp == strconv.Itoa(port) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return "", errors.New("cannot tell which of -peers is this server: pass -self")
	}
	return found[0], nil
}

// parseRaftLogBytes reads -raft-log-bytes: "auto" is logbound.Auto.
func parseRaftLogBytes(v string) (int64, error) {
	if v == "auto" {
		return logbound.Auto, nil
	}
	n, err := sysmem.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("-raft-log-bytes: %w", err)
	}
	return n, nil
}

// parseMaxMemory reads -max-memory: "auto" is three quarters of what the
// machine (or its cgroup) gives the process, "0" no bound.
func parseMaxMemory(v string) (int64, error) {
	if v == "auto" {
		m, err := sysmem.Machine()
		if err != nil {
			return 0, fmt.Errorf("-max-memory auto: %w (give a size)", err)
		}
		return max(m/4*3, memlimit.Min), nil
	}
	n, err := sysmem.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("-max-memory: %w", err)
	}
	if n > 0 && n < memlimit.Min {
		return 0, fmt.Errorf("-max-memory %s: at least %d MiB, or 0 for no bound", v, memlimit.Min>>20)
	}
	return n, nil
}
