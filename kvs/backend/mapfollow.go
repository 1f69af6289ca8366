package backend

import (
	"slices"
	"time"

	"github.com/batchkv/batchkv/shard"
)

// mapPollEvery is how often a replicated server asks one of the meta
// group's replicas for the current map, in case a change was not
// published to it (its publisher stopped, or it was down).
const mapPollEvery = time.Second

// followMap adopts newer maps from the meta group until stop closes:
// each second it reads its own meta replica's, if it has one, and asks
// the next of the other meta replicas for theirs (its own may have been
// taken out of the group, and stopped advancing).
func (b *Replicated) followMap(stop <-chan struct{}) {
	tick := time.NewTicker(mapPollEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		b.adoptStored()
		var others []string
		for _, a := range b.set.Map().Meta {
			if a != b.set.Self() {
				others = append(others, a)
			}
		}
		if len(others) > 0 {
			b.adoptFrom(others[n%len(others)])
		}
	}
}

// refreshAsk bounds asking one meta replica for its map on a publish.
const refreshAsk = 500 * time.Millisecond

// refreshMap adopts the newest map of the meta group, told that the map
// changed. hint, a map a caller sent, is not adopted: only its epoch (how
// new a map to look for) and its meta replicas that are members under
// this server's map (where to look besides this map's meta replicas)
// are used. It reads its own meta replica's map, then asks the others
// until it has one as new as hint.
func (b *Replicated) refreshMap(hint *shard.Map) {
	cur := b.set.Map()
	if hint.Epoch <= cur.Epoch {
		return
	}
	if b.adoptStored(); b.set.Map().Epoch >= hint.Epoch {
		return
	}
	asked := map[string]bool{b.set.Self(): true}
	for _, addr := range append(slices.Clone(cur.Meta), hint.Meta...) {
		if asked[addr] || !slices.Contains(cur.Servers, addr) {
			continue
		}
		asked[addr] = true
		if b.adoptFrom(addr) && b.set.Map().Epoch >= hint.Epoch {
			return
		}
	}
}

// adoptStored adopts the map this server's meta replica holds, if it has
// one and it is newer.
func (b *Replicated) adoptStored() {
	m, err := b.set.StoredMap()
	if err == nil && m != nil && m.Epoch > b.set.Map().Epoch {
		err = b.set.Adopt(m)
		b.logAdopted("own meta replica", m.Epoch, err)
	}
}

// adoptFrom asks the server at addr, a replica of the meta group, for its
// map and adopts it if newer; it reports whether it adopted one.
func (b *Replicated) adoptFrom(addr string) bool {
	if addr == b.set.Self() {
		return false
	}
	l, err := b.admin.Layout(addr, refreshAsk)
	if err != nil || l.Epoch <= b.set.Map().Epoch {
		return false
	}
	m, err := shard.FromWire(l)
	if err == nil {
		err = b.set.Adopt(m)
	}
	b.logAdopted(addr, l.Epoch, err)
	return err == nil
}

func (b *Replicated) logAdopted(from string, epoch uint64, err error) {
	if err != nil {
		b.log.Warn("adopting the shard map", "from", from, "epoch", epoch, "err", err)
	} else {
		b.log.Info("adopted the shard map", "from", from, "epoch", epoch)
	}
}
