package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// top prints a table of the whole cluster every interval: one row per
// server with its rates over the last interval, and at RF>1 one row per
// shard with its leader, term and each replica's lag. With -once it
// samples twice, interval apart, prints one table and returns.
func top(args []string, admin client.Admin, cfg client.Config, timeout time.Duration, stdout io.Writer) error {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	once := fs.Bool("once", false, "print one table (rates over one interval) and exit")
	interval := fs.Duration("interval", time.Second, "time between samples")
	noShards := fs.Bool("no-shards", false, "omit the per-shard rows")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *interval <= 0 {
		return fmt.Errorf("usage: kvsctl top [-once] [-interval d] [-no-shards]")
	}
	sample := func() []nodeSample { return sampleCluster(admin, cfg.Servers, min(timeout, *interval)) }
	prev := sample()
	if *once {
		time.Sleep(*interval)
		cur := sample()
		if err := writeTop(stdout, prev, cur, !*noShards); err != nil {
			return err
		}
		return allUnreachable(cur)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	t := time.NewTicker(*interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		cur := sample()
		fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear screen
		fmt.Fprintf(stdout, "kvsctl top  %s  every %v  (Ctrl-C to quit)\n\n", time.Now().Format("15:04:05"), *interval)
		if err := writeTop(stdout, prev, cur, !*noShards); err != nil {
			return err
		}
		prev = cur
	}
}

// allUnreachable returns an error when no server answered: the cluster
// is down or not where -hosts says.
func allUnreachable(samples []nodeSample) error {
	for _, s := range samples {
		if s.err == nil {
			return nil
		}
	}
	return fmt.Errorf("none of the %d servers answered", len(samples))
}

// nodeSample is one server's Status reply, or why there is none.
type nodeSample struct {
	addr string
	st   wire.StatusReply
	err  error
}

// sampleCluster asks every server for its status at once.
func sampleCluster(admin client.Admin, servers []string, timeout time.Duration) []nodeSample {
	out := make([]nodeSample, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := admin.Status(srv, wire.StatusRequest{}, timeout)
			if err == nil && st.Node == nil {
				err = errors.New("server reports no counters (older version)")
			}
			out[i] = nodeSample{addr: srv, st: st, err: err}
		}()
	}
	wg.Wait()
	return out
}

// nodeRates is one server's rates between two samples.
type nodeRates struct {
	gets, writes, errs, redirs, cpuPct, rxMiB, txMiB float64
	rssMiB, storeMiB, bufMiB                         float64
	conns                                            int
}

// rates returns what the server did between a and b, or false if the
// server restarted in between or either sample is missing.
func rates(a, b nodeSample) (nodeRates, bool) {
	if a.err != nil || b.err != nil || !a.st.Node.Started.Equal(b.st.Node.Started) {
		return nodeRates{}, false
	}
	x, y := a.st.Node, b.st.Node
	secs := y.At.Sub(x.At).Seconds()
	if secs <= 0 {
		return nodeRates{}, false
	}
	per := func(from, to uint64) float64 { return float64(to-from) / secs }
	const mib = 1 << 20
	return nodeRates{
		gets: per(x.Gets, y.Gets), writes: per(x.Writes, y.Writes), errs: per(x.Errors+x.BadConn, y.Errors+y.BadConn),
		redirs: per(x.Redirects, y.Redirects),
		cpuPct: 100 * float64(y.CPU-x.CPU) / float64(y.At.Sub(x.At)),
		rxMiB:  per(x.BytesIn, y.BytesIn) / mib, txMiB: per(x.BytesOut, y.BytesOut) / mib,
		rssMiB: float64(y.RSS) / mib, storeMiB: float64(y.StoreBytes) / mib,
		bufMiB: float64(y.Buffered) / mib, conns: y.Conns,
	}, true
}

// The node table's columns, after the node's name.
var (
	topHeadings = []string{"OPS/S", "GET/S", "PUT/S", "CPU%", "RSS_MIB", "STORE_MIB", "BUF_MIB", "RX_MIB/S", "TX_MIB/S", "CONNS", "REDIR/S", "ERR/S", "DISK_FREE"}
	topWidths   = []int{10, 10, 9, 6, 8, 9, 7, 9, 9, 6, 8, 6, 10}
)

// add adds r's rates to t's.
func (t *nodeRates) add(r nodeRates) {
	t.gets += r.gets
	t.writes += r.writes
	t.errs += r.errs
	t.redirs += r.redirs
	t.cpuPct += r.cpuPct
	t.rssMiB += r.rssMiB
	t.storeMiB += r.storeMiB
	t.bufMiB += r.bufMiB
	t.rxMiB += r.rxMiB
	t.txMiB += r.txMiB
	t.conns += r.conns
}

// cells formats r in the node table's columns.
func (r nodeRates) cells() []string {
	return []string{
		fmt.Sprintf("%.0f", r.gets+r.writes), fmt.Sprintf("%.0f", r.gets), fmt.Sprintf("%.0f", r.writes),
		fmt.Sprintf("%.1f", r.cpuPct), fmt.Sprintf("%.1f", r.rssMiB), fmt.Sprintf("%.1f", r.storeMiB), fmt.Sprintf("%.1f", r.bufMiB), fmt.Sprintf("%.2f", r.rxMiB),
		fmt.Sprintf("%.2f", r.txMiB), strconv.Itoa(r.conns), fmt.Sprintf("%.0f", r.redirs), fmt.Sprintf("%.0f", r.errs),
	}
}

// writeTop prints the node table of the interval from prev to cur and,
// when shards is set and the cluster is replicated, the shard table of cur.
func writeTop(w io.Writer, prev, cur []nodeSample, shards bool) error {
	width := len("total")
	for _, c := range cur {
		width = max(width, len(c.addr))
	}
	// Numbers right-aligned under right-aligned headings; the node names
	// on the left.
	row := func(name string, cells ...string) {
		fmt.Fprintf(w, "%-*s", width, name)
		for i, c := range cells {
			fmt.Fprintf(w, " %*s", topWidths[i], c)
		}
		fmt.Fprintln(w)
	}
	row("NODE", topHeadings...)
	var total nodeRates
	for i, c := range cur {
		if c.err != nil {
			row(c.addr, "unreachable: "+shorten(c.err.Error(), 70))
			continue
		}
		r, ok := rates(prev[i], c)
		if !ok {
			row(c.addr, "(restarted or first sample)")
			continue
		}
		row(c.addr, append(r.cells(), diskCell(c.st.Disk))...)
		total.add(r)
	}
	row("total", append(total.cells(), "")...)
	if !shards {
		return nil
	}
	rows := shardRows(cur)
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tLEADER\tTERM\tCOMMIT\tLAG (entries behind the leader's commit, per replica)")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\n", r.shard, orDash(r.leader), r.term, r.commit, strings.Join(r.lags, "  "))
	}
	return tw.Flush()
}

// shardRow is one shard as the replicas that answered see it.
type shardRow struct {
	shard  int
	leader string
	term   uint64
	commit uint64
	lags   []string // "replica:N", in the shard's replica order
}

// shardRows builds one row per shard from every server's view: the leader
// is the replica that says it leads (the highest term wins), and a
// replica's lag is how many committed entries it has yet to apply, counted
// against the leader's commit index.
func shardRows(cur []nodeSample) []shardRow {
	views := map[int]map[string]wire.ShardStatus{}
	order := map[int][]string{}
	for _, c := range cur {
		if c.err != nil {
			continue
		}
		for _, s := range c.st.Shards {
			if views[s.Shard] == nil {
				views[s.Shard] = map[string]wire.ShardStatus{}
			}
			views[s.Shard][c.st.Self] = s
			if len(s.Replicas) > 0 {
				order[s.Shard] = s.Replicas
			}
		}
	}
	var rows []shardRow
	for sh, v := range views {
		r := shardRow{shard: sh}
		var lead *wire.ShardStatus
		for self, s := range v {
			if s.State == "Leader" && (lead == nil || s.Term > lead.Term) {
				s := s
				lead, r.leader = &s, self
			}
			r.term = max(r.term, s.Term)
		}
		if lead != nil {
			r.commit = lead.Commit
		}
		for _, rep := range order[sh] {
			s, ok := v[rep]
			switch {
			case !ok:
				r.lags = append(r.lags, rep+"=?")
			case lead == nil:
				r.lags = append(r.lags, fmt.Sprintf("%s=applied %d", rep, s.Applied))
			default:
				r.lags = append(r.lags, fmt.Sprintf("%s=%d", rep, max(int64(lead.Commit)-int64(s.Applied), 0)))
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].shard < rows[j].shard })
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
