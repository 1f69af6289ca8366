package load

import (
	"context"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// TestFirstAckAfterIsTheEarliestReturn: writes answered out of the order
// they were recorded in are timed by the earliest answer among those
// called after the fault, and those called before it do not count.
func TestFirstAckAfterIsTheEarliestReturn(t *testing.T) {
	var l AckLog
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	l.add(ms(90), ms(2500))  // called before the fault, held through it
	l.add(ms(110), ms(1900)) // called after it, answered late
	l.add(ms(150), ms(1200)) // called after it, answered first
	d, ok := l.FirstAckAfter(100 * time.Millisecond)
	require.True(t, ok)
	require.Equal(t, 1100*time.Millisecond, d)
	_, ok = l.FirstAckAfter(200 * time.Millisecond)
	require.False(t, ok, "no write was called after 200 ms")
}

// TestProbeWritesPastAHeldWrite: with the leader cut off from its peers
// (its clients still reach it), the writes it takes are held until it
// steps down. The probe goes on writing meanwhile, so a failover is timed
// from the first write called after the cut, not from whenever the write
// in flight at the cut came back.
func TestProbeWritesPastAHeldWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a failover")
	}
	c := clustertest.New(t, 3, 3, 1)
	l := c.WaitLeader(0, -1)
	layout, err := shard.New(c.Members(), 1, 3, 0)
	require.NoError(t, err)
	p, h, cl := NewProbe(layout, 0), linz.NewHistory(), c.Client(t)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); p.Run(cl, h, stop) }()
	time.Sleep(500 * time.Millisecond)
	cut := time.Duration(h.Now())
	c.Isolate(l, true)
	c.WaitLeader(0, l)
	time.Sleep(time.Second)
	close(stop)
	<-done

	took, ok := p.Acks.FirstAckAfter(cut)
	require.True(t, ok, "no write called after the cut was acknowledged")
	t.Logf("first write called after the cut acknowledged %v after it", took)
	// A write held by the cut-off leader overlaps writes called after it.
	var held, overlapped int
	ops := h.Ops()
	for _, a := range ops {
		if time.Duration(a.Return-a.Call) < 300*time.Millisecond {
			continue
		}
		held++
		for _, b := range ops {
			if b.Call > a.Call && b.Call < a.Return {
				overlapped++
				break
			}
		}
	}
	require.NotZero(t, held, "no write was held by the cut-off leader")
	require.Equal(t, held, overlapped, "the probe waited for a held write before its next one")

	// The history, with a last read of each key, is checked in moments.
	var reads []wire.Op
	for _, k := range p.Keys {
		reads = append(reads, wire.Op{Code: wire.OpGet, Key: k})
	}
	call := h.Now()
	res, err := cl.Do(context.Background(), reads)
	require.NoError(t, err)
	h.Record(3000, reads, res, err, call, h.Now())
	begin := time.Now()
	require.Equal(t, porcupine.Ok, clustertest.Linearizable(t, h.Ops()))
	t.Logf("%d ops checked in %v", len(h.Ops()), time.Since(begin))
}
