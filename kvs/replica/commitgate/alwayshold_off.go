//go:build !planted_alwayshold

package commitgate

// plantedAlwaysHold plants a gate that holds every entry it can (with
// commitSiblings others in flight), whether holding pays or not: the
// gate before issue 33, which held over slow links. Only servers built
// with -tags planted_alwayshold have it, for the slow-network verdict's
// own test.
const plantedAlwaysHold = false
