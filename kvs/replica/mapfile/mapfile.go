package mapfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/batchkv/batchkv/kvs/replica/durablefs"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Name is the file in the data dir that keeps the last map a server
// adopted, so that it restarts with the current placement.
const Name = "map.json"

// Load reads the map a server saved in its data dir dir, or returns nil
// if there is none (or no data dir: dir is empty).
func Load(dir string) (*shard.Map, error) {
	if dir == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, Name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replica: saved map: %w", err)
	}
	var l wire.ClusterMap
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("replica: saved map %s: %w", filepath.Join(dir, Name), err)
	}
	return shard.FromWire(l)
}

// Save writes m to dir durably: to a temporary file, synced, then
// renamed over the old one, then dir synced. Without a data dir (dir is
// empty) it keeps nothing.
func Save(dir string, m *shard.Map) error {
	if dir == "" {
		return nil
	}
	if err := durablefs.MkdirAllDurable(dir, raftstore.DataDirMode); err != nil {
		return fmt.Errorf("replica: data dir: %w", err)
	}
	raw, err := json.MarshalIndent(m.Wire(), "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, Name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("replica: saving the map: %w", err)
	}
	_, err = f.Write(raw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, Name))
	}
	if err == nil {
		err = durablefs.SyncDir(dir) // the rename itself survives a power cut
	}
	if err != nil {
		return fmt.Errorf("replica: saving the map: %w", err)
	}
	return nil
}
