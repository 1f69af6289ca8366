// Package raftstore keeps a replica's Raft log, its term and vote, and
// its snapshots: in its shard's data dir, or in memory for a replica
// without one. Open hands a replica's Raft node the two stores:
//
//	logs, snaps, err := raftstore.Open(raftstore.Config{Shard: 3, Dir: dir, Format: raftstore.LogWAL})
//	var dmg *raftstore.DamagedError
//	if errors.As(err, &dmg) { /* wipe (WipeForRebuild) and rebuild from the peers */ }
//	r, err := raft.NewRaft(conf, fsm, logs, logs, snaps, transport)
//	...
//	raftstore.Close(logs)
//
// What the stores add to hashicorp/raft's:
//
//   - Two log formats (logstore.go): raft-wal segment files (the default,
//     over package walfiles's file layer) or a raft-boltdb file; a data
//     dir keeps the format it was made with.
//   - A CRC-32C on every entry, checked whenever one is read
//     (checkedlog.go), and before Raft reads anything, a check of the
//     whole log, the WAL's tail (waltail.go) and the latest snapshot
//     (opencheck.go): damage is ErrCorrupt, never served.
//   - Durability through power cuts (snapshots.go, and package durablefs
//     for directories): every directory entry a file depends on is
//     synced, and snapshots' directories too.
//   - Full disks (spacelog.go): the log refuses commands while the
//     server's diskspace.Watch says so, and a WAL sealed for want of
//     space is reopened once space returns.
//   - A rebuild after damage (wipe.go): the data is wiped, keeping the
//     term and vote, and a mark holds the last index the damaged log had.
//
// docs/corruption.md, docs/durability.md and docs/disks.md tell the
// whole story.
package raftstore
