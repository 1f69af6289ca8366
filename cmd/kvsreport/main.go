// Command kvsreport reads server logs and prints the course's report: the
// median of each server's per-second ops/s samples, and their total.
//
//	kvsreport logs/latest/server-*.log
//
// prints, for servers whose logs are named server-<node>.log,
//
//	node0 cpu% 150.2 rss_mib 812.0 rx_mib/s 30.1 tx_mib/s 300.2 (medians)
//	node0 median 2300000 op/s
//	total 2300000 op/s
//
// Only samples of a loaded server count (ops/s above zero), and the first
// -skip of them (warm-up and preload) and the last one (a partial second)
// are dropped when enough remain.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/runlog"
)

func main() {
	err := run(os.Args[1:], os.Stdout)
	if err != nil && !errors.Is(err, cli.ErrHelpShown) {
		fmt.Fprintln(os.Stderr, "kvsreport:", err)
	}
	os.Exit(cli.Exit(err))
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kvsreport", flag.ContinueOnError)
	skip := fs.Int("skip", 3, "loaded samples to drop at the start of each log")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: kvsreport [-skip N] SERVER_LOG [SERVER_LOG ...]   e.g. kvsreport logs/latest/server-*.log")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, stdout, os.Stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: kvsreport [-skip N] SERVER_LOG [SERVER_LOG ...]")
	}
	var total float64
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "server-"), ".log")
		n, err := runlog.Parse(f, name, runlog.Server)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		steady := n.Steady(*skip)
		m := runlog.Medians(steady)
		total += m.Ops
		if m.Ops > 0 {
			fmt.Fprintf(stdout, "%s cpu%% %.1f rss_mib %.1f rx_mib/s %.2f tx_mib/s %.2f cpu_s/Mops %.3f wire_bytes/op %.1f (medians of %d samples) peak_rss_mib %.1f\n",
				name, m.CPU, m.RSS, m.RxMiBs, m.TxMiBs, m.CPU/100/(m.Ops/1e6), (m.RxMiBs+m.TxMiBs)*(1<<20)/m.Ops, len(steady), n.PeakRSSSample())
		}
		fmt.Fprintf(stdout, "%s median %.0f op/s\n", name, m.Ops)
	}
	fmt.Fprintf(stdout, "total %.0f op/s\n", total)
	return nil
}
