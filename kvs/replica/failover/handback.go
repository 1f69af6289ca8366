package failover

import "time"

// HandBack decides when a leader that is not its shard's preferred replica
// should hand leadership back to it: once it has led for
// Timing.HandBackAfterLead, and the preferred replica is answering
// heartbeats and has been for Timing.HandBackHealthyFor if it failed them
// before. It is not safe for concurrent use: one goroutine feeds it the
// leader's heartbeat observations and ticks.
type HandBack struct {
	self, preferred string
	t               Timing

	leaderSince  time.Time            // zero while not leading
	failing      map[string]bool      // peers whose heartbeats fail
	healthySince map[string]time.Time // when a failing peer answered again
}

// NewHandBack returns the hand-back decision of replica self of a shard
// whose preferred replica is preferred.
func NewHandBack(self, preferred string, t Timing) *HandBack {
	return &HandBack{self: self, preferred: preferred, t: t,
		failing: map[string]bool{}, healthySince: map[string]time.Time{}}
}

// HeartbeatFailed records that the leader's heartbeats to peer fail.
func (h *HandBack) HeartbeatFailed(peer string) {
	h.failing[peer] = true
	delete(h.healthySince, peer)
}

// HeartbeatResumed records that peer answers heartbeats again at now.
func (h *HandBack) HeartbeatResumed(peer string, now time.Time) {
	delete(h.failing, peer)
	h.healthySince[peer] = now
}

// Tick says, at now, whether to hand leadership to the preferred replica
// now; leading says whether this replica leads. After a hand-back the
// lead time starts again, so a failed transfer is retried only after
// another HandBackAfterLead.
func (h *HandBack) Tick(now time.Time, leading bool) bool {
	if !leading {
		h.leaderSince = time.Time{}
		return false
	}
	if h.leaderSince.IsZero() {
		h.leaderSince = now
	}
	if h.self == h.preferred || now.Sub(h.leaderSince) < h.t.HandBackAfterLead || h.failing[h.preferred] {
		return false
	}
	if t, ok := h.healthySince[h.preferred]; ok && now.Sub(t) < h.t.HandBackHealthyFor {
		return false
	}
	h.leaderSince = time.Time{}
	return true
}
