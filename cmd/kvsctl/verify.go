package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/replcheck"
	"github.com/batchkv/batchkv/wire"
)

// verifyRound is the pause between rounds of verify: a server gives a
// caller without a node certificate one digest a second.
const verifyRound = 1100 * time.Millisecond

// verify asks every server for the content digests of its replicas, until
// each shard's replicas have applied the same index (or the deadline
// passes), and compares them (replcheck.Compare). It prints one line per
// shard and fails when a replica differs, or a shard never settled.
func verify(admin client.Admin, cfg client.Config, timeout, within time.Duration, stdout io.Writer) error {
	if cfg.Shards == 0 {
		return errors.New("verify: the cluster is not replicated")
	}
	verdicts := map[int]replcheck.Verdict{}
	deadline := time.Now().Add(within)
	for {
		byShard := map[int][]replcheck.Replica{}
		for _, srv := range cfg.Servers {
			st, err := admin.Status(srv, wire.StatusRequest{Digest: true}, timeout)
			if err != nil {
				fmt.Fprintf(stdout, "%s: %v\n", srv, err)
				continue
			}
			for _, s := range st.Shards {
				byShard[s.Shard] = append(byShard[s.Shard], replcheck.Replica{Addr: srv, Status: s})
			}
		}
		pending := 0
		for sh := range cfg.Shards {
			if v, done := verdicts[sh]; done && v.Settled {
				continue
			}
			verdicts[sh] = replcheck.Compare(sh, byShard[sh], cfg.RF)
			if !verdicts[sh].Settled {
				pending++
			}
		}
		if pending == 0 || time.Now().Add(verifyRound).After(deadline) {
			break
		}
		time.Sleep(verifyRound)
	}
	shards := make([]int, 0, len(verdicts))
	for sh := range verdicts {
		shards = append(shards, sh)
	}
	sort.Ints(shards)
	var differ, unsettled int
	for _, sh := range shards {
		v := verdicts[sh]
		switch {
		case !v.Settled:
			unsettled++
			fmt.Fprintf(stdout, "NOT COMPARED %s\n", v.Desc)
		case len(v.Differs) > 0:
			differ++
			fmt.Fprintf(stdout, "DIFFERS %s\n", v.Desc)
		default:
			fmt.Fprintf(stdout, "ok %s\n", v.Desc)
		}
	}
	if differ > 0 || unsettled > 0 {
		return fmt.Errorf("verify: %d of %d shards have a replica that differs, %d could not be compared (their replicas never applied the same index within %v)",
			differ, len(shards), unsettled, within)
	}
	fmt.Fprintf(stdout, "all %d shards: every replica has the same content\n", len(shards))
	return nil
}
