package kvs_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// metricValue finds one sample of a family by its label, as a float.
func metricValue(t *testing.T, fams []*dto.MetricFamily, name, label, value string) float64 {
	t.Helper()
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

// TestMetricsCountOpsStatusesAndBatches: the registry reports what the
// server did: ops by type, results by status, and the batch size histogram.
func TestMetricsCountOpsStatusesAndBatches(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	cl := c.client(t)
	_, err := cl.Do(t.Context(), []wire.Op{
		{Code: wire.OpPut, Key: "a", Value: "1"},
		{Code: wire.OpGet, Key: "a"},
		{Code: wire.OpGet, Key: "missing"},
		{Code: wire.OpGet, Key: ""}, // empty key: rejected
		{Code: wire.OpDelete, Key: "a"},
	})
	require.NoError(t, err)
	fams, err := c.servers[0].Metrics().Gather()
	require.NoError(t, err)
	require.Equal(t, 2.0, metricValue(t, fams, "batchkv_ops_total", "type", "get"))
	require.Equal(t, 1.0, metricValue(t, fams, "batchkv_ops_total", "type", "put"))
	require.Equal(t, 1.0, metricValue(t, fams, "batchkv_ops_total", "type", "delete"))
	require.Equal(t, 3.0, metricValue(t, fams, "batchkv_op_results_total", "status", "ok"))
	require.Equal(t, 1.0, metricValue(t, fams, "batchkv_op_results_total", "status", "not_found"))
	require.Equal(t, 1.0, metricValue(t, fams, "batchkv_op_results_total", "status", "empty_key"))
	for _, f := range fams {
		if f.GetName() == "batchkv_batch_ops" {
			h := f.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(1), h.GetSampleCount())
			require.Equal(t, 5.0, h.GetSampleSum())
			for _, b := range h.GetBucket() {
				want := uint64(0)
				if b.GetUpperBound() >= 8 { // 5 ops fall in (4, 8]
					want = 1
				}
				require.Equal(t, want, b.GetCumulativeCount(), "bucket %v", b.GetUpperBound())
			}
			return
		}
	}
	t.Fatal("no batchkv_batch_ops histogram")
}
