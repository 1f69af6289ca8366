package failover_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/replica/failover"
)

func TestRefusePreVote(t *testing.T) {
	log := failover.LogPosition{Term: 4, Index: 100}
	cases := []struct {
		name   string
		vote   failover.Vote
		own    failover.LogPosition
		p      failover.PreVote
		refuse bool
	}{
		{"stood in that term, same log", failover.Vote{Term: 5, For: "a"}, log,
			failover.PreVote{From: "b", Term: 5, Log: log}, true},
		{"stood in that term, peer's log behind", failover.Vote{Term: 5, For: "a"}, log,
			failover.PreVote{From: "b", Term: 5, Log: failover.LogPosition{Term: 4, Index: 90}}, true},
		{"voted for a third replica in that term", failover.Vote{Term: 5, For: "c"}, log,
			failover.PreVote{From: "b", Term: 5, Log: log}, true},
		{"voted in a later term", failover.Vote{Term: 6, For: "a"}, log,
			failover.PreVote{From: "b", Term: 5, Log: log}, true},
		{"voted for the peer itself in that term", failover.Vote{Term: 5, For: "b"}, log,
			failover.PreVote{From: "b", Term: 5, Log: log}, false},
		{"voted in an earlier term only", failover.Vote{Term: 4, For: "a"}, log,
			failover.PreVote{From: "b", Term: 5, Log: log}, false},
		{"never voted", failover.Vote{}, log,
			failover.PreVote{From: "b", Term: 1, Log: log}, false},
		{"peer's log has a later index", failover.Vote{Term: 5, For: "a"}, log,
			failover.PreVote{From: "b", Term: 5, Log: failover.LogPosition{Term: 4, Index: 101}}, false},
		{"peer's log has a later term", failover.Vote{Term: 5, For: "a"}, log,
			failover.PreVote{From: "b", Term: 5, Log: failover.LogPosition{Term: 5, Index: 1}}, false},
		{"own log has a later term, shorter", failover.Vote{Term: 5, For: "a"}, failover.LogPosition{Term: 5, Index: 3},
			failover.PreVote{From: "b", Term: 5, Log: log}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.refuse, failover.RefusePreVote(c.vote, c.own, c.p))
		})
	}
}
