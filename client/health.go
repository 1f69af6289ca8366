package client

import "time"

// ServerHealth is the client's view of one server (its circuit breaker,
// package internal/breaker).
type ServerHealth struct {
	Addr string
	// Healthy is false while the server is marked unhealthy and gets no
	// calls but the probe.
	Healthy bool
	// Failures is the number of consecutive failed calls.
	Failures int
	// RetryIn is the time until the next probe while unhealthy.
	RetryIn time.Duration
	// LastError is the last failure, if any since the last success.
	LastError error
	// LoneSlept and LonePolled are the moving mean times of the lone
	// calls to the server that slept for their replies and of those that
	// polled (Config.LonePoll): lone calls poll while LonePolled is under
	// nine tenths of LoneSlept. Zero for a way not yet timed.
	LoneSlept, LonePolled time.Duration
}

func serverHealth(s *serverConn) ServerHealth {
	st := s.health.State()
	h := ServerHealth{Addr: s.addr, Healthy: st.Healthy, Failures: st.Failures, RetryIn: st.RetryIn, LastError: st.LastError}
	h.LoneSlept, h.LonePolled = s.lonePoll.Means()
	return h
}
