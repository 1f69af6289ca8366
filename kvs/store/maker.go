package store

// MakerOfKind returns a constructor of empty stores of proto's kind, for
// each shard and each snapshot restore of a replicated server (whose
// Config.Store is the kind to use, not a store to fill). A store of
// another type (tests wrap stores) gets the default kind, an Arena
// counted in acct.
func MakerOfKind(proto Store, acct *Account) func() Store {
	if _, ok := proto.(*SyncMap); ok {
		return func() Store { return NewSyncMap() }
	}
	return func() Store { return NewArenaIn(acct) }
}
