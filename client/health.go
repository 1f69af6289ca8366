package client

import (
	"time"

	"github.com/batchkv/batchkv/internal/breaker"
)

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
}

func serverHealth(addr string, st breaker.State) ServerHealth {
	return ServerHealth{Addr: addr, Healthy: st.Healthy, Failures: st.Failures, RetryIn: st.RetryIn, LastError: st.LastError}
}
