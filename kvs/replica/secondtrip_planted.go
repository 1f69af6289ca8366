//go:build planted_secondtrip

package replica

// plantedSecondTrip is on: this server pays a second round trip to the
// quorum in every write (see secondtrip_off.go).
const plantedSecondTrip = true
