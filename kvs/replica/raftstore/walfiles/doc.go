// Package walfiles opens a replica's raft-wal log with the file layer
// that batchkv puts under it:
//
//   - segments raft-wal drops are renamed away and unlinked by a
//     sweeper, not under raft-wal's write lock (sweep.go);
//   - a sealed segment is read from its file, and its writer and write
//     buffer are let go (sealed.go);
//   - under -unsafe-nosync, segment files never sync (open.go);
//   - servers built with -tags planted_latesync acknowledge a write
//     before it syncs, for the power-cut tests' negative control.
//
// Package raftstore opens it, and keeps the checks on top of it:
//
//	w, err := walfiles.Open(dir, 16<<20, false, hclog.NewNullLogger())
//	...
//	err = w.Close() // waits for the sweeper
package walfiles
