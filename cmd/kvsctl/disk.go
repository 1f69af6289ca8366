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

// serverDisk is one server's data dir as it reported it.
type serverDisk struct {
	server string
	disk   *wire.DiskStats
}

// writeDisks prints each server's data dir: free and total space, and
// whether it is full (the server then takes no log entries, and leads
// nothing while the rest of its shards' replicas can write).
func writeDisks(w io.Writer, disks []serverDisk) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tDATA DIR\tFREE_MIB\tTOTAL_MIB\tFULL (free below MiB)")
	for _, s := range disks {
		if s.disk == nil {
			fmt.Fprintf(tw, "%s\t(in memory)\t-\t-\t-\n", s.server)
			continue
		}
		full := "no"
		if s.disk.Full {
			full = "FULL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s (%d)\n", s.server, s.disk.Dir, s.disk.Free>>20, s.disk.Total>>20, full, s.disk.Reserve>>20)
	}
	return tw.Flush()
}
