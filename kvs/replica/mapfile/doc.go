// Package mapfile keeps the shard map a server last adopted in its data
// dir (the file Name), so that it restarts with the current placement:
//
//	if err := mapfile.Save(dir, m); err != nil { ... } // durable on return
//	m, err := mapfile.Load(dir)                         // nil: none saved
//
// Save replaces the file atomically and survives a power cut: the new
// file is synced, renamed over the old one, and the directory synced.
package mapfile
