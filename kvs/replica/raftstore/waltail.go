package raftstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// raft-wal takes the last batch of its tail segment for a torn write when
// that batch fails its CRC, and drops it when it opens, silently: a flip
// in an entry of the last batch, acknowledged long before, shortens the
// log, and the entry check never sees it. checkWALTail looks past the
// end raft-wal recovered: a batch there that was written whole (its
// entries carry the next indexes in order, and a commit frame follows
// them) and that has no page of zeros (what a write cut short by a power
// cut leaves in a segment's preallocated space) was damaged, not torn.
//
// A segment is a 32-byte header, then frames of an 8-byte header (type;
// 3 reserved bytes; the payload's length, or a commit's CRC) and a
// payload padded to 8 bytes.
const (
	walFileHeaderLen  = 32
	walFrameHeaderLen = 8
	walFrameEntry     = 1
	walFrameIndex     = 2
	walFrameCommit    = 3
	tornPageSize      = 4096
)

// checkWALTail checks the tail segment of the WAL in walDir, whose log
// raft-wal opened with last as its last index.
func checkWALTail(walDir string, last uint64) error {
	segs, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil || len(segs) == 0 {
		return err
	}
	slices.Sort(segs)
	tail := segs[len(segs)-1]
	baseName, _, _ := strings.Cut(filepath.Base(tail), "-")
	base, err := strconv.ParseUint(baseName, 10, 64)
	if err != nil {
		return nil // not a segment name raft-wal writes
	}
	raw, err := os.ReadFile(tail)
	if err != nil {
		return err
	}
	var recovered uint64
	if last >= base {
		recovered = last - base + 1
	}
	// Walk the frames; note where the recovered entries' commit ends and
	// the entries that follow it.
	type entryFrame struct{ off, end int }
	var entries []entryFrame
	recoveredEnd, lastCommitEnd, lastCommitEntries := -1, -1, 0
	if recovered == 0 {
		recoveredEnd = walFileHeaderLen
	}
	for off := walFileHeaderLen; off+walFrameHeaderLen <= len(raw); {
		h := raw[off : off+walFrameHeaderLen]
		n := int(binary.LittleEndian.Uint32(h[4:8]))
		switch h[0] {
		case walFrameEntry:
			end := off + walFrameHeaderLen + n + (walFrameHeaderLen-n%walFrameHeaderLen)%walFrameHeaderLen
			if end > len(raw) {
				off = len(raw)
				continue
			}
			entries = append(entries, entryFrame{off + walFrameHeaderLen, off + walFrameHeaderLen + n})
			off = end
			continue
		case walFrameCommit:
			off += walFrameHeaderLen
			if uint64(len(entries)) == recovered && recoveredEnd < 0 {
				recoveredEnd = off
			}
			lastCommitEnd, lastCommitEntries = off, len(entries)
			continue
		case walFrameIndex:
			return nil // a sealed segment: raft-wal reads it by its index
		}
		break // zeros, or what a torn write left
	}
	if recoveredEnd < 0 || uint64(lastCommitEntries) <= recovered {
		return nil
	}
	dropped := entries[recovered:lastCommitEntries]
	for k, e := range dropped {
		var l raft.Log
		if err := (&wal.BinaryCodec{}).Decode(raw[e.off:e.end], &l); err != nil || l.Index != base+recovered+uint64(k) {
			return nil // not the batch after the recovered ones: left by a torn write
		}
	}
	for p := (recoveredEnd + tornPageSize - 1) / tornPageSize * tornPageSize; p+tornPageSize <= lastCommitEnd; p += tornPageSize {
		if allZero(raw[p : p+tornPageSize]) {
			return nil // a page never written: a torn write
		}
	}
	return &CorruptError{File: tail, Index: base + recovered, Detail: fmt.Sprintf(
		"entries %d-%d, at offsets %d-%d, were written and committed, but their batch fails the log's own CRC: raft-wal dropped them",
		base+recovered, base+uint64(lastCommitEntries)-1, recoveredEnd, lastCommitEnd)}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
