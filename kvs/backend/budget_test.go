package backend

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// wentOver reports whether b's WentOver channel holds a token, taking it.
func wentOver(b *Budget) bool {
	select {
	case <-b.WentOver():
		return true
	default:
		return false
	}
}

// TestBudgetWentOver: a charge that takes the bytes held to the limit
// leaves one token, however many charges follow over it; a charge under
// the limit leaves none; once released under the limit, going over again
// leaves another.
func TestBudgetWentOver(t *testing.T) {
	b := NewBudget(100)
	b.Charge(99)
	require.False(t, wentOver(b), "under the limit")
	b.Charge(1)
	b.Charge(50)
	require.True(t, b.Over())
	require.True(t, wentOver(b), "to the limit")
	require.False(t, wentOver(b), "one token, not one a charge")
	b.Charge(5)
	require.False(t, wentOver(b), "a charge while over is no going over")
	b.Release(65)
	require.False(t, b.Over())
	b.Charge(10)
	require.True(t, wentOver(b), "over again")

	b = NewBudget(100)
	b.Charge(150)
	require.True(t, wentOver(b), "past the limit in one charge")
	b.Charge(0)
	b.Charge(-5)
	require.False(t, wentOver(b))
}
