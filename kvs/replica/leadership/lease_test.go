package leadership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLeaseAfterATransfer: a lease given up for a leadership transfer is
// not renewed meanwhile, and once resumed only by entries appended after
// the quarantine (the transfer RPC's deadline and two election
// timeouts), while the transfer's target may still be elected at once;
// entries appended later renew it again.
func TestLeaseAfterATransfer(t *testing.T) {
	l := NewLease(true, 400*time.Millisecond, TransferQuarantine(50*time.Millisecond, 100*time.Millisecond))
	l.Renew(l.Now(), 3)
	require.True(t, l.Valid(3))
	require.False(t, l.Valid(4), "a lease holds only in the term it was granted in")

	l.GiveUp()
	require.False(t, l.Valid(3))
	l.Renew(l.Now(), 3)
	require.False(t, l.Valid(3), "renewed while given up")

	l.Resume()
	resumed := l.Now()
	l.Renew(resumed, 3)
	require.False(t, l.Valid(3), "renewed by an entry appended while the transfer's target may still be elected")
	l.Renew(resumed+int64(150*time.Millisecond), 3)
	require.False(t, l.Valid(3), "renewed by an entry appended within the quarantine")
	l.Renew(resumed+int64(200*time.Millisecond), 3)
	require.True(t, l.Valid(3), "an entry appended after the quarantine renews the lease")
}

// TestLeaseOff: a lease that is off is never valid.
func TestLeaseOff(t *testing.T) {
	l := NewLease(false, time.Second, time.Second)
	l.Renew(l.Now(), 1)
	require.False(t, l.Valid(1))
}
