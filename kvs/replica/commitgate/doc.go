// Package commitgate groups a leader's log entries, so that Raft stores
// and sends several at once (Gate explains when it holds one). A shard's
// leader passes each entry it appends through its gate:
//
//	gate := commitgate.New(commitgate.Config{Window: commitgate.DefaultWindow})
//	t := gate.Enter() // may wait up to a window
//	f := r.Apply(entry, timeout)
//	err := f.Error()
//	gate.Done(t)
//
// A Gate is safe for concurrent use.
package commitgate
