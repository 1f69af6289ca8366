package kvs

import "github.com/batchkv/batchkv/kvs/limits"

// Limits bound what any one peer can make a server hold (package limits).
type Limits = limits.Limits

// ReplicatedRequestBudget is a replicated server's default
// Limits.RequestBudget.
const ReplicatedRequestBudget = limits.ReplicatedRequestBudget

// DefaultLimits returns the limits a server runs with.
func DefaultLimits() Limits { return limits.Default() }
