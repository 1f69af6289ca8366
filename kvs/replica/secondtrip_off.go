//go:build !planted_secondtrip

package replica

// plantedSecondTrip plants a second round trip to the quorum in every
// write (a Raft barrier after the entry), for the slow-network verdict's
// own test: only servers built with -tags planted_secondtrip have it.
const plantedSecondTrip = false
