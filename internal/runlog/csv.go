package runlog

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SummaryHeader names the columns of a summary row: one row per run, with
// its configuration, the total of the servers' median ops/s, and per node
// (";"-separated, in node order) the medians of ops/s, CPU %, RSS and
// network rates over the steady seconds. Latencies are the worst client's
// batch round-trip percentiles.
var SummaryHeader = []string{
	"sweep", "repeat", "servers", "clients", "batch_size", "goroutines", "total_ops_s",
	"server_ops_s", "server_cpu_pct", "server_rss_mib", "server_rx_mib_s", "server_tx_mib_s",
	"client_ops_s", "client_cpu_pct", "client_rss_mib", "client_rx_mib_s", "client_tx_mib_s",
	"p50_ms", "p99_ms", "p999_ms", "log_dir",
}

// Summary is one run, as a summary row holds it.
type Summary struct {
	Sweep      string
	Repeat     int
	Servers    int
	Clients    int
	BatchSize  int
	Goroutines int
	TotalOps   float64
	ServerCPU  []float64 // per server, CPU %
	ClientCPU  []float64 // per client, CPU %
	P50        float64   // ms
	P99        float64   // ms
	P999       float64   // ms
	LogDir     string
}

// SummaryRow returns the run's summary row (see SummaryHeader).
func (r *Run) SummaryRow(sweep string, repeat, skip int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	list := func(nodes []*Node, get func(Sample) float64) string {
		parts := make([]string, len(nodes))
		for i, n := range nodes {
			parts[i] = f(get(Medians(n.Steady(skip))))
		}
		return strings.Join(parts, ";")
	}
	total := 0.0
	for _, n := range r.Servers {
		total += Medians(n.Steady(skip)).Ops
	}
	var batch, goroutines string
	var p50, p99, p999 float64
	for _, c := range r.Clients {
		batch, goroutines = c.Config["batchSize"], c.Config["numClients"]
		p50 = max(p50, float64(c.P50.Microseconds())/1e3)
		p99 = max(p99, float64(c.P99.Microseconds())/1e3)
		p999 = max(p999, float64(c.P999.Microseconds())/1e3)
	}
	row := []string{sweep, strconv.Itoa(repeat), strconv.Itoa(len(r.Servers)), strconv.Itoa(len(r.Clients)), batch, goroutines, f(total)}
	for _, nodes := range [][]*Node{r.Servers, r.Clients} {
		row = append(row,
			list(nodes, func(s Sample) float64 { return s.Ops }),
			list(nodes, func(s Sample) float64 { return s.CPU }),
			list(nodes, func(s Sample) float64 { return s.RSS }),
			list(nodes, func(s Sample) float64 { return s.RxMiBs }),
			list(nodes, func(s Sample) float64 { return s.TxMiBs }))
	}
	return append(row, f(p50), f(p99), f(p999), r.Dir)
}

// ReadSummaries reads summary rows, with their header, from r.
func ReadSummaries(r io.Reader) ([]Summary, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(SummaryHeader, ",") {
		return nil, fmt.Errorf("runlog: not a summary CSV: the header must be %s", strings.Join(SummaryHeader, ","))
	}
	col := map[string]int{}
	for i, name := range SummaryHeader {
		col[name] = i
	}
	var out []Summary
	for i, row := range rows[1:] {
		p := parser{row: row, col: col}
		s := Summary{
			Sweep: row[col["sweep"]], Repeat: p.int("repeat"), Servers: p.int("servers"), Clients: p.int("clients"),
			BatchSize: p.int("batch_size"), Goroutines: p.int("goroutines"), TotalOps: p.float("total_ops_s"),
			ServerCPU: p.list("server_cpu_pct"), ClientCPU: p.list("client_cpu_pct"),
			P50: p.float("p50_ms"), P99: p.float("p99_ms"), P999: p.float("p999_ms"), LogDir: row[col["log_dir"]],
		}
		if p.err != nil {
			return nil, fmt.Errorf("runlog: summary row %d: %w", i+2, p.err)
		}
		out = append(out, s)
	}
	return out, nil
}

// parser converts a row's fields, keeping the first error.
type parser struct {
	row []string
	col map[string]int
	err error
}

func (p *parser) float(name string) float64 {
	v, err := strconv.ParseFloat(p.row[p.col[name]], 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("%s: %w", name, err)
	}
	return v
}

func (p *parser) int(name string) int {
	v, err := strconv.Atoi(p.row[p.col[name]])
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("%s: %w", name, err)
	}
	return v
}

func (p *parser) list(name string) []float64 {
	var out []float64
	for _, f := range strings.Split(p.row[p.col[name]], ";") {
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, v)
	}
	return out
}

// UtilHeader names the columns of WriteUtil's CSV.
var UtilHeader = []string{"node", "role", "second", "ops_s", "cpu_pct", "rss_mib", "rx_mib_s", "tx_mib_s"}

// WriteUtil writes every node's per-second samples as CSV, with a header.
func (r *Run) WriteUtil(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(UtilHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, n := range append(append([]*Node{}, r.Servers...), r.Clients...) {
		for i, s := range n.Samples {
			if err := cw.Write([]string{n.Name, string(n.Role), strconv.Itoa(i + 1), f(s.Ops), f(s.CPU), f(s.RSS), f(s.RxMiBs), f(s.TxMiBs)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
