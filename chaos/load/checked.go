package load

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/wire"
)

// Client ids in the history, apart from the checked clients' own.
const (
	ProbeClient  = 1000 // the failover probe
	PinnedClient = 2000 // clients that talk to one server only (plus the server's index)
	FinalClient  = 3000 // the final reads
)

// CheckedKeys names the n checked keys.
func CheckedKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("c%04d", i)
	}
	return keys
}

// RunChecked runs the checked clients through cl until stop is closed:
// every op goes into h, and the ops answered are counted on tl.
func RunChecked(cfg CheckedConfig, cl *client.Client, h *linz.History, tl *timeline.Timeline, seed uint64, stop <-chan struct{}) {
	linz.Drive(cfg.Clients, cfg.MaxOps, CheckedKeys(cfg.Keys), 0, 5*time.Second, cl.Do, h, seed, stop, tl.CheckedOps)
}

// FinalGet is the final read of key, as the history records it.
func FinalGet(key string) []wire.Op { return []wire.Op{{Code: wire.OpGet, Key: key}} }
