// Package diskspace watches the free space of a server's data dir, and
// whether its peers' data dirs are full (asked through their Status RPC).
// A replica set starts one Watch for its data dir; the log stores ask it
// whether to refuse commands (Watch.Refuses), the shards' replicas
// whether they may stand for election or must hand leadership over
// (Watch.IsFull, Watch.PeerIsFull), and the Status RPC reports it
// (Watch.Stats). The same poll notes whether each peer's stores are near
// their share of memory, which the shards' leaders ask before they take
// puts (Watch.PeersStoresNear).
//
//	w, err := diskspace.Start(diskspace.Config{Dir: dir, Reserve: reserve})
//	defer w.Close()
//	if w.IsFull() { ... }
//
// A nil *Watch stands for replicas kept in memory: it is never full.
package diskspace
