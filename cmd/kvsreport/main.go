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
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kvsreport:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kvsreport", flag.ContinueOnError)
	skip := fs.Int("skip", 3, "loaded samples to drop at the start of each log")
	if err := fs.Parse(args); err != nil {
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
		s, err := parse(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "server-"), ".log")
		ops := steady(s.ops, s.loaded(), *skip)
		m := median(ops)
		total += m
		if len(s.util) > 0 && m > 0 {
			u := steady(s.util, s.loaded(), *skip)
			cpu, rss, rx, tx := median(column(u, 0)), median(column(u, 1)), median(column(u, 2)), median(column(u, 3))
			fmt.Fprintf(stdout, "%s cpu%% %.1f rss_mib %.1f rx_mib/s %.2f tx_mib/s %.2f cpu_s/Mops %.3f wire_bytes/op %.1f (medians of %d samples) peak_rss_mib %.1f\n",
				name, cpu, rss, rx, tx, cpu/100/(m/1e6), (rx+tx)*(1<<20)/m, len(u), slices.Max(column(s.util, 1)))
		}
		fmt.Fprintf(stdout, "%s median %.0f op/s\n", name, m)
	}
	fmt.Fprintf(stdout, "total %.0f op/s\n", total)
	return nil
}

// samples are one server's per-second lines.
type samples struct {
	ops  []float64   // ops/s lines
	util [][]float64 // util lines: cpu%, rss_mib, rx_mib/s, tx_mib/s
}

// loaded reports which seconds had load.
func (s *samples) loaded() []bool {
	l := make([]bool, len(s.ops))
	for i, v := range s.ops {
		l[i] = v > 0
	}
	return l
}

func parse(r io.Reader) (*samples, error) {
	s := &samples{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "ops/s":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return nil, err
			}
			s.ops = append(s.ops, v)
		case len(f) == 9 && f[0] == "util":
			var row []float64
			for _, i := range []int{2, 4, 6, 8} {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return nil, err
				}
				row = append(row, v)
			}
			s.util = append(s.util, row)
		}
	}
	return s, sc.Err()
}

// steady keeps the loaded seconds, dropping the first skip and the last
// one when at least one sample would remain.
func steady[T any](xs []T, loaded []bool, skip int) []T {
	var keep []T
	for i, x := range xs {
		if i < len(loaded) && loaded[i] {
			keep = append(keep, x)
		}
	}
	if len(keep) > skip+1 {
		keep = keep[skip : len(keep)-1]
	}
	return keep
}

func column(rows [][]float64, c int) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = r[c]
	}
	return out
}

func median(xs []float64) float64 {
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
