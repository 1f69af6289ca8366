package commitgate

import "time"

// DefaultWindow is the window a leader under heavy load holds an entry
// for, unless configured otherwise (replica.Timing.CommitWindow).
const DefaultWindow = 40 * time.Millisecond

// Config configures a Gate.
type Config struct {
	// Window is how long a held entry waits for the entries that arrive
	// after it; 0 lets every entry go at once.
	Window time.Duration
}

// validate fills cfg's defaults: a negative Window turns the gate off,
// as 0 does.
func (cfg *Config) validate() {
	cfg.Window = max(cfg.Window, 0)
}

// New returns a gate with cfg's window.
func New(cfg Config) *Gate {
	cfg.validate()
	return &Gate{limit: cfg.Window}
}
