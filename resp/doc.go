// Package resp reads and writes the Redis serialization protocol (RESP2
// and RESP3), so that any Redis client or tool can speak to a server, and
// a load generator can speak to any Redis-compatible server. It imports
// only the standard library.
//
// A server parses commands straight out of its read buffer with
// ParseCommand, which returns the command's arguments aliasing the buffer
// and how many bytes it took, ErrIncomplete (with the bytes it needs)
// when the buffer ends inside a command, or a *ProtocolError when the
// bytes are not RESP or break a Limit: the stream cannot be resynchronized
// after one, and the connection should answer it and close.
//
//	args, n, err := resp.ParseCommand(buf, args[:0], limits)
//
// Replies are built with the Append functions, which append to a byte
// slice, as strconv's do; the protocol version (2 or 3) picks how a null
// and a map are written.
//
// A client writes commands with AppendCommand and reads replies with a
// Reader, one value at a time.
package resp
