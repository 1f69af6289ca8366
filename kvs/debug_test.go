package kvs_test

import (
	"testing"
	"time"
)

func TestDebugRepl(t *testing.T) {
	c := newReplCluster(t, 3, 3, 3)
	for range 6 {
		time.Sleep(time.Second)
		for i := range 3 {
			st, err := c.status(i)
			t.Logf("server %d err %v", i, err)
			for _, s := range st.Shards {
				t.Logf("  %+v", s)
			}
		}
	}
}
