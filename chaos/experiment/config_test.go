package experiment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/chaos/load"
)

// TestOptionsValidate: the defaults are valid; a cluster without servers
// or shards, an RF above the servers, a negative duration, a CPU share
// outside (0, 1] or a bad load is refused with the matching error.
func TestOptionsValidate(t *testing.T) {
	require.NoError(t, DefaultOptions().Validate())
	for _, c := range []struct {
		bad  func(*Options)
		want error
	}{
		{func(o *Options) { o.Servers = 0 }, ErrBadCluster},
		{func(o *Options) { o.Shards = 0 }, ErrBadCluster},
		{func(o *Options) { o.RF = 4 }, ErrBadCluster},
		{func(o *Options) { o.Spares = -1 }, ErrBadCluster},
		{func(o *Options) { o.Fault = -time.Second }, ErrBadDuration},
		{func(o *Options) { o.Latencies = []time.Duration{-time.Millisecond} }, ErrBadDuration},
		{func(o *Options) { o.CheckTimeout = 0 }, ErrBadDuration},
		{func(o *Options) { o.FinalReads = 0 }, ErrBadDuration},
		{func(o *Options) { o.CPUFraction = 0 }, ErrBadCPUFraction},
		{func(o *Options) { o.CPUFraction = 2 }, ErrBadCPUFraction},
		{func(o *Options) { o.ServerCPU = -0.5 }, ErrBadCPUFraction},
		{func(o *Options) { o.ServerCPU = 1.5 }, ErrBadCPUFraction},
		{func(o *Options) { o.Bulk.Goroutines = 0 }, load.ErrBadBulk},
		{func(o *Options) { o.Checked.Keys = 0 }, load.ErrBadChecked},
	} {
		o := DefaultOptions()
		c.bad(&o)
		require.ErrorIs(t, o.Validate(), c.want)
	}
}
