package session

import (
	"sync"
	"testing"
)

// TestIDsAreUniqueAndNonZero: concurrent callers, who give some back
// as they go, never hold the same session at once, and a session
// returned is handed out again with its numbering kept.
func TestIDsAreUniqueAndNonZero(t *testing.T) {
	p := NewPool()
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []*Session
			for i := range 1000 {
				s := p.Get()
				if i%2 == 0 { // given back: another goroutine may take it next
					p.Put(s)
					continue
				}
				held = append(held, s)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range held {
				if s.ID == 0 || seen[s.ID] {
					t.Errorf("session ID %d handed out twice or zero", s.ID)
				}
				seen[s.ID] = true
			}
		}()
	}
	wg.Wait()
	s := p.Get()
	s.Seq = 41
	p.Put(s)
	if again := p.Get(); again != s || again.Seq != 41 {
		t.Fatalf("a returned session was not reused with its numbering: %+v", again)
	}
}
