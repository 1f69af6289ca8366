package replica

import (
	"testing"
	"time"
)

// TestCheckLeaseRefusesUnsafeLeases: the default lease fits under the
// silence threshold with room for clocks 50% apart; a lease that does not,
// or none, is refused.
func TestCheckLeaseRefusesUnsafeLeases(t *testing.T) {
	tm := DefaultTiming()
	if err := checkLease(tm); err != nil {
		t.Fatalf("default lease refused: %v", err)
	}
	for _, d := range []time.Duration{0, 427 * time.Millisecond, 640 * time.Millisecond, 5 * time.Second} {
		tm.LeaseRead = d
		if err := checkLease(tm); err == nil {
			t.Errorf("lease %v accepted; the silence threshold is 640ms", d)
		}
	}
}
