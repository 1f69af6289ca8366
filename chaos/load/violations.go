package load

import "sync"

// Violations collects what the checks found, keeping the first few. It
// is safe for concurrent use.
type Violations struct {
	mu    sync.Mutex
	n     int
	first []string
}

// Add records one violation.
func (v *Violations) Add(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if len(v.first) < 20 {
		v.first = append(v.first, s)
	}
}

// Count returns how many violations were found.
func (v *Violations) Count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n
}

// First returns the first few violations found (up to 20).
func (v *Violations) First() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.first...)
}
