package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// A shard's snapshot is a stream:
//
//	magic "BKVSNAP1" | nSessions uvarint |
//	nSessions × (id u64 | seq uvarint | last i64) |
//	pairs × (1 | keyLen uvarint | key | valueLen uvarint | value) | 0
//
// Snapshot copies the shard into one buffer while raft holds back applies
// (it calls Snapshot from the FSM goroutine), and Persist writes it out
// while applies go on.
const snapshotMagic = "BKVSNAP1"

// fsmSnapshot is a shard's state, encoded, waiting to be persisted.
type fsmSnapshot struct{ data []byte }

// Snapshot implements raft.FSM.
func (f *shardFSM) Snapshot() (raft.FSMSnapshot, error) {
	b := make([]byte, 0, 1<<20)
	b = append(b, snapshotMagic...)
	b = binary.AppendUvarint(b, uint64(len(f.sessions)))
	for id, s := range f.sessions {
		b = binary.LittleEndian.AppendUint64(b, id)
		b = binary.AppendUvarint(b, s.seq)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.last))
	}
	f.current().Range(func(k string, v []byte) bool {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
		return true
	})
	b = append(b, 0)
	return &fsmSnapshot{data: b}, nil
}

// Persist implements raft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() { s.data = nil }

// Restore implements raft.FSM: it replaces the shard's state with the
// snapshot's. Readers switch to the new store at once.
func (f *shardFSM) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }()
	r := bufio.NewReaderSize(rc, 1<<20)
	head := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("replica: snapshot header: %w", err)
	}
	if string(head) != snapshotMagic {
		return errors.New("replica: not a shard snapshot")
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return fmt.Errorf("replica: snapshot sessions: %w", err)
	}
	sessions := make(map[uint64]session, min(n, 1<<20))
	var word [8]byte
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
		sessions[id] = session{seq: seq, last: int64(binary.LittleEndian.Uint64(word[:]))}
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
	f.sessions = sessions
	f.store.Store(&storeBox{st})
	f.restores.Add(1)
	return nil
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
