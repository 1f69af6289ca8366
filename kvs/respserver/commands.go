package respserver

import (
	"fmt"
	"strconv"

	"github.com/batchkv/batchkv/resp"
	"github.com/batchkv/batchkv/wire"
)

// The RESP commands. Those that touch keys (GET, SET, SETNX, GETSET,
// MGET, MSET, DEL, UNLINK, EXISTS) become ops of the connection's batch; the others are
// answered at once (control.go). A command's keys and values are
// checked before anything is queued, so a bad one changes nothing.

// command queues or answers one command.
func (c *respConn) command(args [][]byte) {
	var buf [16]byte
	switch string(lower(buf[:0], args[0])) {
	case "get":
		if c.arity(args, 2, 2) && c.keysOK(args[1:2]) {
			ops := c.addOps(respGet, 1)
			ops[0] = wire.Op{Code: wire.OpGet, Key: string(args[1])}
		}
	case "set":
		if !c.arity(args, 3, -1) || !c.keysOK(args[1:2]) {
			return
		}
		kind, op, ok := c.setOptions(args[3:])
		if ok {
			op.Key, op.Value = string(args[1]), string(args[2])
			c.addOps(kind, 1)[0] = op
		}
	case "setnx":
		if c.arity(args, 3, 3) && c.keysOK(args[1:2]) {
			c.addOps(respSetNX, 1)[0] = wire.Op{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: string(args[1]), Value: string(args[2])}
		}
	case "getset":
		if c.arity(args, 3, 3) && c.keysOK(args[1:2]) {
			c.addOps(respSetGet, 1)[0] = wire.Op{Code: wire.OpPutIf, Cond: wire.CondAlways, Key: string(args[1]), Value: string(args[2])}
		}
	case "mget":
		c.gets(respMGet, args)
	case "exists":
		c.gets(respExists, args)
	case "mset":
		if !c.arity(args, 3, -1) {
			return
		}
		if len(args)%2 == 0 {
			c.fail("ERR wrong number of arguments for 'mset' command")
			return
		}
		keys := make([][]byte, 0, len(args)/2)
		for i := 1; i < len(args); i += 2 {
			keys = append(keys, args[i])
		}
		if c.keysOK(keys) {
			ops := c.addOps(respSet, len(keys))
			for i := range ops {
				ops[i] = wire.Op{Code: wire.OpPut, Key: string(args[1+2*i]), Value: string(args[2+2*i])}
			}
		}
	case "del", "unlink":
		if c.arity(args, 2, wire.MaxBatchOps/2+1) && c.keysOK(args[1:]) {
			ops := c.addOps(respDel, 2*(len(args)-1))
			for i, k := range args[1:] {
				key := string(k)
				ops[2*i] = wire.Op{Code: wire.OpGet, Key: key}
				ops[2*i+1] = wire.Op{Code: wire.OpDelete, Key: key}
			}
		}
	case "quit":
		c.quit = true
		c.immediate(func(b []byte) []byte { return resp.AppendSimple(b, "OK") })
	default:
		c.control(args)
	}
}

// gets queues a command whose arguments after its name are keys to read.
func (c *respConn) gets(kind respKind, args [][]byte) {
	if c.arity(args, 2, wire.MaxBatchOps+1) && c.keysOK(args[1:]) {
		ops := c.addOps(kind, len(args)-1)
		for i, k := range args[1:] {
			ops[i] = wire.Op{Code: wire.OpGet, Key: string(k)}
		}
	}
}

// arity checks that a command has from lo to hi arguments, its name
// included (hi < 0: no upper bound), and answers an error if not.
func (c *respConn) arity(args [][]byte, lo, hi int) bool {
	if len(args) < lo || (hi >= 0 && len(args) > hi) {
		var buf [16]byte
		if hi > lo && len(args) > hi {
			c.fail(fmt.Sprintf("ERR too many arguments for '%s': at most %d keys in one command (one batch)", lower(buf[:0], args[0]), hi-1))
			return false
		}
		c.fail(fmt.Sprintf("ERR wrong number of arguments for '%s' command", lower(buf[:0], args[0])))
		return false
	}
	return true
}

// keysOK checks keys against the store's limits (values are at most
// wire.MaxValueBytes by respLimits), and answers an error if one breaks
// them.
func (c *respConn) keysOK(keys [][]byte) bool {
	for _, k := range keys {
		switch {
		case len(k) == 0:
			c.fail("ERR empty keys are not supported")
			return false
		case len(k) > wire.MaxKeyBytes:
			c.fail(fmt.Sprintf("ERR key of %d bytes over the limit of %d", len(k), wire.MaxKeyBytes))
			return false
		}
	}
	return true
}

// setOptions reads SET's options: NX, XX and GET make it a conditional
// write (OpPutIf, decided where the key is applied: a shard's state
// machine, or a memory-only store under the key's lock), as does IFEQ
// value (Valkey's compare-and-set); the
// options that set an expiry are refused, since batchkv keys do not
// expire and no option may be silently ignored. It answers an error and
// returns false when the options are refused.
func (c *respConn) setOptions(opts [][]byte) (respKind, wire.Op, bool) {
	op := wire.Op{Code: wire.OpPut}
	var nx, xx, get, ifeq bool
	for i := 0; i < len(opts); i++ {
		var buf [16]byte
		switch opt := string(lower(buf[:0], opts[i])); opt {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "get":
			get = true
		case "ifeq":
			if i+1 == len(opts) {
				c.fail("ERR syntax error")
				return 0, op, false
			}
			ifeq, op.Expect = true, string(opts[i+1])
			i++
		case "ex", "px", "exat", "pxat", "keepttl":
			c.fail(fmt.Sprintf("ERR SET option %s is not supported: keys in batchkv do not expire", upper(opt)))
			return 0, op, false
		default:
			c.fail("ERR syntax error")
			return 0, op, false
		}
	}
	switch {
	case nx && xx, nx && ifeq, xx && ifeq:
		c.fail("ERR syntax error")
		return 0, op, false
	case !nx && !xx && !get && !ifeq:
		return respSet, op, true
	case nx:
		op.Cond = wire.CondAbsent
	case xx:
		op.Cond = wire.CondPresent
	case ifeq:
		op.Cond = wire.CondEqual
	default:
		op.Cond = wire.CondAlways
	}
	op.Code = wire.OpPutIf
	if get {
		return respSetGet, op, true
	}
	return respSetCond, op, true
}

// reply appends the reply of cmd, whose ops the batch has served.
func (c *respConn) reply(b []byte, cmd respCmd) []byte {
	if cmd.kind == respImmediate {
		return append(b, c.imm[cmd.first:cmd.first+cmd.n]...)
	}
	if c.rep.Status != wire.StatusOK {
		return resp.AppendError(b, "ERR batch refused: "+c.rep.Status.String()+": "+c.rep.Err)
	}
	res := c.rep.Results[cmd.first : cmd.first+cmd.n]
	ops := c.ops[cmd.first : cmd.first+cmd.n]
	switch cmd.kind {
	case respGet:
		return appendValue(b, ops[0], res[0], cmd.proto)
	case respMGet:
		b = resp.AppendArray(b, len(res))
		for i := range res {
			b = appendValue(b, ops[i], res[i], cmd.proto)
		}
		return b
	case respSetCond: // SET NX|XX|IFEQ: OK if written, else null
		switch {
		case res[0].Status.Applied():
			return resp.AppendSimple(b, "OK")
		case res[0].Status.Mismatch():
			return resp.AppendNull(b, cmd.proto)
		}
		return appendOpError(b, ops[0], res[0].Status)
	case respSetGet: // SET ... GET, GETSET: the value before, or null
		switch {
		case res[0].Status.Decided() && res[0].Status.Present():
			return resp.AppendBulkString(b, res[0].Value)
		case res[0].Status.Decided():
			return resp.AppendNull(b, cmd.proto)
		}
		return appendOpError(b, ops[0], res[0].Status)
	case respSetNX: // 1 if written, 0 if not
		switch {
		case res[0].Status.Applied():
			return resp.AppendInt(b, 1)
		case res[0].Status.Mismatch():
			return resp.AppendInt(b, 0)
		}
		return appendOpError(b, ops[0], res[0].Status)
	case respSet:
		for i := range res {
			if res[i].Status != wire.StatusOK {
				return appendOpError(b, ops[i], res[i].Status)
			}
		}
		return resp.AppendSimple(b, "OK")
	default: // respExists, respDel
		found := 0
		for i := range res {
			switch {
			case res[i].Status == wire.StatusOK:
				if ops[i].Code == wire.OpGet {
					found++
				}
			case res[i].Status != wire.StatusNotFound:
				return appendOpError(b, ops[i], res[i].Status)
			}
		}
		return resp.AppendInt(b, int64(found))
	}
}

// appendValue appends the reply to a get: its value, null, or an error.
func appendValue(b []byte, op wire.Op, res wire.Result, proto int) []byte {
	switch res.Status {
	case wire.StatusOK:
		return resp.AppendBulkString(b, res.Value)
	case wire.StatusNotFound:
		return resp.AppendNull(b, proto)
	default:
		return appendOpError(b, op, res.Status)
	}
}

// appendOpError appends the error of an op that was not applied (a get:
// not served). A write refused for memory gets Redis's OOM error, which
// clients know.
func appendOpError(b []byte, op wire.Op, st wire.Status) []byte {
	what := "not applied"
	switch {
	case st == wire.StatusUnknown:
		what = "it may or may not have been applied"
	case op.Code == wire.OpGet:
		what = "not served"
	}
	prefix := "ERR"
	if st == wire.StatusNoMemory {
		prefix = "OOM command not allowed when used memory > 'maxmemory':"
	}
	return resp.AppendError(b, fmt.Sprintf("%s %s of key %s: %s (%s)", prefix, op.Code, strconv.QuoteToASCII(truncate(op.Key, 40)), st, what))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// lower appends the ASCII lower case of name, up to cap(dst) bytes, to
// dst: command names compare without an allocation.
func lower(dst, name []byte) []byte {
	for _, ch := range name {
		if len(dst) == cap(dst) {
			break
		}
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		dst = append(dst, ch)
	}
	return dst
}

func upper(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'a' <= ch && ch <= 'z' {
			b[i] = ch - ('a' - 'A')
		}
	}
	return string(b)
}
