//go:build planted_alwayshold

package commitgate

// plantedAlwaysHold is on: the gate holds whether holding pays or not
// (see alwayshold_off.go).
const plantedAlwaysHold = true
