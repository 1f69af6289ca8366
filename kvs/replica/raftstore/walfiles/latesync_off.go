//go:build !planted_latesync

package walfiles

import "github.com/hashicorp/raft-wal/types"

// plantLateSync returns vfs: the planted acknowledge-before-sync bug is
// only in servers built with -tags planted_latesync.
func plantLateSync(vfs types.VFS) types.VFS { return vfs }
