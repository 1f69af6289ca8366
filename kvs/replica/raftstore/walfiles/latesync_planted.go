//go:build planted_latesync

package walfiles

import (
	"github.com/hashicorp/raft-wal/types"

	"github.com/batchkv/batchkv/internal/planted"
)

// plantLateSync plants the acknowledge-before-sync bug (planted.LateSync)
// in the WAL of a server built with -tags planted_latesync, for the
// power-cut tests' negative control.
func plantLateSync(vfs types.VFS) types.VFS { return planted.LateSync(vfs) }
