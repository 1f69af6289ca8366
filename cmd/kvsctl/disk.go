package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/batchkv/batchkv/wire"
)

// diskCell is a server's data dir space in one cell: free MiB, "FULL"
// before it when the server takes no log entries, "-" for a server that
// keeps its replicas in memory (or is older than disk reports).
func diskCell(d *wire.DiskStats) string {
	if d == nil {
		return "-"
	}
	if d.Full {
		return fmt.Sprintf("FULL %dM", d.Free>>20)
	}
	return fmt.Sprintf("%dM", d.Free>>20)
}

// serverDisk is one server's data dir and stores as it reported them.
type serverDisk struct {
	server string
	disk   *wire.DiskStats
	stores *wire.StoreStats
}

// storesCell is a server's stores against their share of -max-memory:
// "MiB (share MiB)", then NEAR when the shards' leaders take no puts for
// them; "-" without a share.
func storesCell(st *wire.StoreStats) string {
	if st == nil || st.Limit == 0 {
		return "-"
	}
	cell := fmt.Sprintf("%d (%d)", st.Bytes>>20, st.Limit>>20)
	if st.NearLimit() {
		cell += " NEAR"
	}
	return cell
}

// writeDisks prints each server's data dir: free and total space, and
// whether it is full (the server then takes no log entries, and leads
// nothing while the rest of its shards' replicas can write); and its
// stores against their share of memory.
func writeDisks(w io.Writer, disks []serverDisk) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tDATA DIR\tFREE_MIB\tTOTAL_MIB\tFULL (free below MiB)\tSTORES_MIB (share)")
	for _, s := range disks {
		if s.disk == nil {
			fmt.Fprintf(tw, "%s\t(in memory)\t-\t-\t-\t%s\n", s.server, storesCell(s.stores))
			continue
		}
		full := "no"
		if s.disk.Full {
			full = "FULL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s (%d)\t%s\n", s.server, s.disk.Dir, s.disk.Free>>20, s.disk.Total>>20, full,
			s.disk.Reserve>>20, storesCell(s.stores))
	}
	return tw.Flush()
}
