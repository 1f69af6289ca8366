// Package wire holds the types that cross the network between clients and
// servers: operations, per-op results and statuses, the batch request and
// reply of the KVService.BatchOp RPC, the course skeleton's legacy request
// types, and a compact binary codec for net/rpc.
//
// It is a leaf package: the client and the server both import it, and it
// imports neither, so the client library never depends on server internals.
//
// A BatchOp carries an ordered list of ops: gets, puts, deletes and
// conditional puts (OpPutIf, see cond.go). The server applies them in order
// and answers with one Result per op, in the same order. Limits on key, value
// and batch size are enforced by both sides: the client refuses to send what
// the server would reject, and the server rejects it anyway (see Limits).
package wire
