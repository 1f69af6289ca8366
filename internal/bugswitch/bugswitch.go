// Package bugswitch holds switches that plant deliberate bugs in the
// server's own code, for the checkers' tests: a check that still passes
// with its switch on proves nothing. Only tests turn them on. (Package
// planted holds the planted stores; these switches sit in the lowest
// layer, so that any package may read them.)
package bugswitch

import "sync/atomic"

// UncheckedData plants the bug that a replica's damage checks exist to
// catch: its log entries and snapshots are read without verifying their
// checksums, so damage on disk is replayed and served.
var UncheckedData atomic.Bool

// NoStartupCheck plants the bug that a server's start-up check exists to
// catch: its replicas never compare their content with their peers', so
// damage no checksum caught goes on being served.
var NoStartupCheck atomic.Bool

// HastyElections plants the bug that a replica's lease rule for standing
// exists to prevent (kvs/replica/leadership/leasestand.go): with lease
// reads on, a replica that has just heard from its leader still stands at
// once when sent a TimeoutNow, so another leader can be elected within
// the old one's lease.
var HastyElections atomic.Bool
