package load

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigValidate: the defaults are valid; a load without goroutines,
// ops, keys or clients, or with a share of reads outside [0, 1], is
// refused with the package's error.
func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultBulk().Validate())
	require.NoError(t, DefaultChecked().Validate())
	for _, bad := range []func(*BulkConfig){
		func(c *BulkConfig) { c.Goroutines = 0 },
		func(c *BulkConfig) { c.Batch = 0 },
		func(c *BulkConfig) { c.Keys = -1 },
		func(c *BulkConfig) { c.Reads = 1.5 },
		func(c *BulkConfig) { c.ValueSize = -1 },
		func(c *BulkConfig) { c.AttemptTimeout = 0 },
	} {
		c := DefaultBulk()
		bad(&c)
		require.ErrorIs(t, c.Validate(), ErrBadBulk, "%+v", c)
	}
	for _, bad := range []func(*CheckedConfig){
		func(c *CheckedConfig) { c.Clients = 0 },
		func(c *CheckedConfig) { c.Keys = 0 },
		func(c *CheckedConfig) { c.MaxOps = 0 },
	} {
		c := DefaultChecked()
		bad(&c)
		require.ErrorIs(t, c.Validate(), ErrBadChecked, "%+v", c)
	}
}
