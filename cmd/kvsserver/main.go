// Command kvsserver runs one server of the store.
//
//	kvsserver -port 8080
//	kvsserver -port 8080 -peers node0:8080,node1:8080 -self node1:8080
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/kvs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kvsserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kvsserver", flag.ContinueOnError)
	port := fs.Int("port", 8080, "TCP port to listen on")
	host := fs.String("host", "", "address to listen on (empty: all interfaces)")
	peers := fs.String("peers", "", "comma-separated host:port of every server, this one included (empty: a single server owning every key)")
	self := fs.String("self", "", "this server's entry in -peers (default: the entry ending in :<port>, if only one does)")
	vnodes := fs.Int("vnodes", 0, "virtual nodes per server on the ring; clients must use the same (0: the default, 1024)")
	report := fs.Duration("report", time.Second, "interval of the rate report (0: no report)")
	frameTimeout := fs.Duration("frame-timeout", 30*time.Second, "close a connection whose request frame stalls this long")
	storeName := fs.String("store", kvs.DefaultStore, "store implementation: "+strings.Join(kvs.Stores, " or "))
	admin := fs.String("admin", "", "host:port of the admin HTTP server with /metrics (Prometheus) and /debug/pprof (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	store, ok := kvs.NewStore(*storeName)
	if !ok {
		return fmt.Errorf("-store %q: want one of %v", *storeName, kvs.Stores)
	}
	cfg := kvs.Config{VirtualNodes: *vnodes, FrameTimeout: *frameTimeout, Logger: log, Store: store}
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
	srv, err := kvs.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	log.Info("serving", "addr", ln.Addr().String(), "peers", cfg.Peers, "self", cfg.Self, "store", *storeName)
	if *admin != "" {
		_, stopAdmin, err := serveAdmin(*admin, srv.Metrics(), log)
		if err != nil {
			_ = srv.Close()
			return err
		}
		defer stopAdmin()
	}
	done := make(chan struct{})
	defer close(done)
	if *report > 0 {
		go kvs.NewReporter(srv.Stats(), stdout).Run(done, *report)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return srv.Close()
	case err := <-errc:
		_ = srv.Close()
		return err
	}
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
