// Package runlog reads the logs of a run-cluster.sh run: the per-second
// samples that servers and load clients print, and the clients' final
// figures. Sweeps, reports and plots are built on it.
//
// A server prints, every second,
//
//	get/s 2850000.00
//	put/s 150000.00
//	ops/s 3000000.00
//	util cpu% 95.1 rss_mib 812.4 rx_mib/s 35.2 tx_mib/s 410.7 unix_ms 1763700000123
//
// and a client "client ops/s N" followed by the same util line and a
// "client second_latency" line (that second's batch latency, which this
// package does not read); at the end a client prints its configuration
// line, "throughput", "batch latency" and "client cpu_s/Mops" lines (see
// cmd/kvsclient).
package runlog

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Role tells servers from clients.
type Role string

// Roles of a node.
const (
	Server Role = "server"
	Client Role = "client"
)

// Sample is one second of one node.
type Sample struct {
	Ops    float64 // ops/s: served (server) or completed (client)
	CPU    float64 // CPU %, 100 per core
	RSS    float64 // resident memory, MiB
	RxMiBs float64 // MiB/s received
	TxMiBs float64 // MiB/s sent
	UnixMS int64   // when it was taken, ms since the Unix epoch; 0 if not logged
}

// Node is one process's log.
type Node struct {
	Name    string
	Role    Role
	Samples []Sample

	// Clients only, from the lines printed at the end (zero if absent).
	Config     map[string]string // the "config k=v ..." line
	Throughput float64           // ops/s over the whole run
	P50        time.Duration     // batch round-trip latency
	P99        time.Duration
	P999       time.Duration
	CPUPerMops float64 // CPU seconds per million ops
	PeakRSS    float64 // MiB
}

// Parse reads one node's log.
func Parse(r io.Reader, name string, role Role) (*Node, error) {
	n := &Node{Name: name, Role: role}
	opsKey := "ops/s"
	if role == Client {
		opsKey = "client ops/s"
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		f := strings.Fields(text)
		var err error
		switch {
		case strings.HasPrefix(text, opsKey+" ") && len(f) == len(strings.Fields(opsKey))+1:
			var v float64
			if v, err = strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				n.Samples = append(n.Samples, Sample{Ops: v})
			}
		case len(f) >= 5 && f[0] == "util" && f[1] == "cpu%":
			err = n.parseUtil(f)
		case role == Client && f[0] == "config":
			n.Config = map[string]string{}
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					n.Config[k] = v
				}
			}
		case role == Client && len(f) == 3 && f[0] == "throughput":
			n.Throughput, err = strconv.ParseFloat(f[1], 64)
		case role == Client && len(f) >= 8 && f[0] == "batch" && f[1] == "latency":
			err = n.parseLatency(f)
		case role == Client && len(f) >= 5 && f[0] == "client" && f[1] == "cpu_s/Mops":
			if n.CPUPerMops, err = strconv.ParseFloat(f[2], 64); err == nil {
				n.PeakRSS, err = strconv.ParseFloat(f[4], 64)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", line, text, err)
		}
	}
	return n, sc.Err()
}

// parseUtil fills the last sample from "util cpu% C rss_mib R [rx_mib/s X
// tx_mib/s Y] [unix_ms T]".
func (n *Node) parseUtil(f []string) error {
	if len(n.Samples) == 0 {
		return nil // a util line before any rate line: ignore
	}
	s := &n.Samples[len(n.Samples)-1]
	for i := 1; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i+1], 64)
		if err != nil {
			return err
		}
		switch f[i] {
		case "cpu%":
			s.CPU = v
		case "rss_mib":
			s.RSS = v
		case "rx_mib/s":
			s.RxMiBs = v
		case "tx_mib/s":
			s.TxMiBs = v
		case "unix_ms":
			s.UnixMS = int64(v)
		}
	}
	return nil
}

// parseLatency reads "batch latency p50 D p99 D p99.9 D p99.99 D max D
// (...)"; quantiles it does not keep are skipped.
func (n *Node) parseLatency(f []string) error {
	for i := 2; i+1 < len(f); i += 2 {
		var dst *time.Duration
		switch f[i] {
		case "p50":
			dst = &n.P50
		case "p99":
			dst = &n.P99
		case "p99.9":
			dst = &n.P999
		default:
			continue
		}
		d, err := time.ParseDuration(f[i+1])
		if err != nil {
			return err
		}
		*dst = d
	}
	return nil
}

// ReadFile reads the log at path, whose name (role-name.log, as
// run-cluster.sh writes them) gives the node's role and name.
func ReadFile(path string) (*Node, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".log")
	role, name, ok := strings.Cut(base, "-")
	if !ok || (Role(role) != Server && Role(role) != Client) {
		return nil, fmt.Errorf("runlog: %s: not named server-<node>.log or client-<node>.log", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := Parse(f, name, Role(role))
	if err != nil {
		return nil, fmt.Errorf("runlog: %s: %w", path, err)
	}
	return n, nil
}

// Run is the logs of one run-cluster.sh run.
type Run struct {
	Dir     string
	Servers []*Node
	Clients []*Node
}

// ReadDir reads every server-*.log and client-*.log in dir.
func ReadDir(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	for _, role := range []Role{Server, Client} {
		paths, err := filepath.Glob(filepath.Join(dir, string(role)+"-*.log"))
		if err != nil {
			return nil, err
		}
		slices.Sort(paths)
		for _, p := range paths {
			n, err := ReadFile(p)
			if err != nil {
				return nil, err
			}
			if role == Server {
				r.Servers = append(r.Servers, n)
			} else {
				r.Clients = append(r.Clients, n)
			}
		}
	}
	if len(r.Servers) == 0 {
		return nil, fmt.Errorf("runlog: no server-*.log in %s", dir)
	}
	return r, nil
}

// Steady returns the node's loaded seconds (ops above zero), without the
// first skip (warm-up, preload) and the last (a partial second) when at
// least one sample remains.
func (n *Node) Steady(skip int) []Sample {
	var keep []Sample
	for _, s := range n.Samples {
		if s.Ops > 0 {
			keep = append(keep, s)
		}
	}
	if len(keep) > skip+1 {
		keep = keep[skip : len(keep)-1]
	}
	return keep
}

// Medians is the per-field median of samples.
func Medians(samples []Sample) Sample {
	col := func(get func(Sample) float64) float64 {
		xs := make([]float64, len(samples))
		for i, s := range samples {
			xs[i] = get(s)
		}
		return Median(xs)
	}
	return Sample{
		Ops:    col(func(s Sample) float64 { return s.Ops }),
		CPU:    col(func(s Sample) float64 { return s.CPU }),
		RSS:    col(func(s Sample) float64 { return s.RSS }),
		RxMiBs: col(func(s Sample) float64 { return s.RxMiBs }),
		TxMiBs: col(func(s Sample) float64 { return s.TxMiBs }),
	}
}

// Median returns the median of xs, 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// PeakRSSSample returns the largest RSS of the node's samples, in MiB.
func (n *Node) PeakRSSSample() float64 {
	peak := 0.0
	for _, s := range n.Samples {
		peak = max(peak, s.RSS)
	}
	return peak
}
