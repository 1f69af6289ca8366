package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// A shard's snapshot is a stream:
//
//	magic "BKVSNAP2" | nSessions uvarint |
//	nSessions × (id u64 | seq uvarint | last i64 | nOutcomes uvarint | nOutcomes × (status u8 | valueLen uvarint | value)) |
//	pairs × (1 | keyLen uvarint | key | valueLen uvarint | value) | 0 | index u64
//
// index, the last command entry the snapshot holds (Content.Index),
// trails the pairs: a server of an earlier version, which stops reading
// at the 0, restores the snapshot as before, so servers can be upgraded
// one at a time. A snapshot without it, written by such a server,
// restores with the index unknown until the next command. The first
// format, "BKVSNAP1", kept no outcomes (a session's was only id, seq
// and last), nor the index; Restore still reads it.
//
// Raft calls Snapshot from the FSM goroutine, so applies wait while it
// runs, and Persist afterwards, while applies go on. Snapshot therefore
// only copies the session table and freezes the store (store.Frozen: one
// lock per arena shard, no copy of the data), and Persist streams the
// frozen view to disk. Copying the whole shard in Snapshot, as a first
// version did, held applies for the copy of every key: 41% of a server's
// CPU in the replicated standard run, and seconds with no progress. A
// store that cannot freeze (SyncMap) is still copied in Snapshot.
const snapshotMagic = "BKVSNAP2"

// snapshotMagicV1 opens a snapshot of the first format, without outcomes.
const snapshotMagicV1 = "BKVSNAP1"

// pairs is what a snapshot reads its keys and values from.
type pairs interface {
	Range(fn func(key string, value []byte) bool)
}

// fsmSnapshot is a shard's state waiting to be persisted: the session
// table as it was, and a view of the store that later applies do not
// change.
type fsmSnapshot struct {
	index    uint64 // the last command entry applied
	sessions map[uint64]session
	view     pairs
	release  func() // ends the view; nil when nothing to release
	pace     *pacer // spreads Persist's writing over time
}

// Hurry ends the pacing of the snapshots being written and to come: the
// replica closes, and raft waits for a snapshot under way before it does.
func (f *Machine) Hurry() { f.hurry.Store(true) }

// Snapshot implements raft.FSM.
func (f *Machine) Snapshot() (raft.FSMSnapshot, error) {
	snap := &fsmSnapshot{index: f.lastCommand.Load(), sessions: maps.Clone(f.sessions), pace: newPacer(f.snapshotShare, &f.hurry)}
	switch st := f.current().(type) {
	case store.Freezer:
		frozen := st.Freeze()
		snap.view, snap.release = frozen, frozen.Release
	default:
		cp := store.NewArena()
		st.Range(func(k string, v []byte) bool {
			store.PutBytes(cp, []byte(k), v)
			return true
		})
		snap.view = cp
	}
	return snap, nil
}

// Persist implements raft.FSMSnapshot: it streams the snapshot to sink,
// paced to leave the CPU to the load (pace.go).
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriterSize(sink, paceChunk)
	s.pace.start()
	b := make([]byte, 0, 64)
	b = append(b, snapshotMagic...)
	b = binary.AppendUvarint(b, uint64(len(s.sessions)))
	_, err := w.Write(b)
	for id, ses := range s.sessions {
		b = binary.LittleEndian.AppendUint64(b[:0], id)
		b = binary.AppendUvarint(b, ses.seq)
		b = binary.LittleEndian.AppendUint64(b, uint64(ses.last))
		b = binary.AppendUvarint(b, uint64(len(ses.outcomes)))
		for _, o := range ses.outcomes {
			b = append(b, byte(o.Status))
			b = binary.AppendUvarint(b, uint64(len(o.Value)))
			b = append(b, o.Value...)
		}
		if err == nil {
			_, err = w.Write(b)
		}
	}
	s.view.Range(func(k string, v []byte) bool {
		b = append(b[:0], 1)
		b = binary.AppendUvarint(b, uint64(len(k)))
		if _, err = w.Write(b); err != nil {
			return false
		}
		if _, err = w.WriteString(k); err != nil {
			return false
		}
		b = binary.AppendUvarint(b[:0], uint64(len(v)))
		if _, err = w.Write(b); err != nil {
			return false
		}
		_, err = w.Write(v)
		s.pace.wrote(len(k) + len(v))
		return err == nil
	})
	if err == nil {
		err = w.WriteByte(0)
	}
	if err == nil {
		_, err = w.Write(binary.LittleEndian.AppendUint64(b[:0], s.index))
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("replica: writing the snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {
	if s.release != nil {
		s.release()
		s.release = nil
	}
	s.view = nil
}

// Restore implements raft.FSM: it replaces the shard's state with the
// snapshot's. Readers switch to the new store at once.
func (f *Machine) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }()
	r := bufio.NewReaderSize(rc, 1<<20)
	head := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("replica: snapshot header: %w", err)
	}
	if string(head) != snapshotMagic && string(head) != snapshotMagicV1 {
		return errors.New("replica: not a shard snapshot")
	}
	withOutcomes := string(head) == snapshotMagic
	var word [8]byte
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return fmt.Errorf("replica: snapshot sessions: %w", err)
	}
	sessions := make(map[uint64]session, min(n, 1<<20))
	for range n {
		if _, err := io.ReadFull(r, word[:]); err != nil {
			return fmt.Errorf("replica: snapshot session: %w", err)
		}
		id := binary.LittleEndian.Uint64(word[:])
		seq, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("replica: snapshot session: %w", err)
		}
		if _, err := io.ReadFull(r, word[:]); err != nil {
			return fmt.Errorf("replica: snapshot session: %w", err)
		}
		ses := session{seq: seq, last: int64(binary.LittleEndian.Uint64(word[:]))}
		if withOutcomes {
			if ses.outcomes, err = readOutcomes(r); err != nil {
				return err
			}
		}
		sessions[id] = ses
	}
	st := f.newStore()
	var key, value []byte
	for {
		more, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("replica: snapshot pairs: %w", err)
		}
		if more == 0 {
			break
		}
		if key, err = readChunk(r, key, wire.MaxKeyBytes); err != nil {
			return err
		}
		if value, err = readChunk(r, value, wire.MaxValueBytes); err != nil {
			return err
		}
		store.PutBytes(st, key, value)
	}
	index := uint64(unknownIndex)
	switch n, err := io.ReadFull(r, word[:]); {
	case err == nil:
		index = binary.LittleEndian.Uint64(word[:])
	case n > 0 || !errors.Is(err, io.EOF):
		return fmt.Errorf("replica: snapshot index: %w", err)
	}
	f.sessions = sessions
	f.changes.Add(1)
	f.store.Store(&storeBox{st})
	f.applied(index)
	f.restores.Add(1)
	return nil
}

// readOutcomes reads a session's outcomes, refusing counts and values
// over the wire's limits before allocating for them.
func readOutcomes(r *bufio.Reader) ([]wire.Result, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("replica: snapshot session outcomes: %w", err)
	}
	if n > wire.MaxBatchOps {
		return nil, fmt.Errorf("replica: snapshot session with %d outcomes, limit %d", n, wire.MaxBatchOps)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]wire.Result, n)
	var value []byte
	for i := range out {
		st, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("replica: snapshot session outcome: %w", err)
		}
		if value, err = readChunk(r, value, wire.MaxValueBytes); err != nil {
			return nil, err
		}
		out[i] = wire.Result{Status: wire.Status(st), Value: string(value)}
	}
	return out, nil
}

// readChunk reads a uvarint length and that many bytes into buf. A length
// over limit is refused before anything is allocated: a snapshot holds
// only pairs that passed the wire's limits.
func readChunk(r *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("replica: snapshot pair: %w", err)
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("replica: snapshot pair part of %d bytes, limit %d", n, limit)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("replica: snapshot pair: %w", err)
	}
	return buf, nil
}
