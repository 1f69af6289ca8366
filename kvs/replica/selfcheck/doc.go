// Package selfcheck is a server's start-up check of its replicas
// (etcd's initial corruption check): once its replicas have opened, a
// server compares each of them with its peers, at the same applied index,
// by content digest.
//
// A replica whose digest differs from two peers that agree with each
// other holds damaged data that no checksum caught (or a bug put there):
// Run returns a *raftstore.CorruptError, and the server handles it as
// damage found while running, and rebuilds the replica. A replica that
// cannot be compared (its shard's replicas never rest at the same index
// meanwhile, as under steady writes) is left as it is: Run gives up after
// 30 s and returns nil.
//
//	go func() {
//		if err := selfcheck.Run(cfg, replica); err != nil {
//			// rebuild the replica
//		}
//	}()
package selfcheck
