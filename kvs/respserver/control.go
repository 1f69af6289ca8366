package respserver

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/batchkv/batchkv/resp"
)

// The RESP commands answered without the store: the connection's and the
// server's own. They answer what Redis would as far as clients and tools
// need to start and run (redis-cli, redis-benchmark, go-redis, redis-py);
// anything else is an unknown command, and the connection goes on.

// respVersion is the Redis version HELLO and INFO report: clients pick
// the commands they send by it, and batchkv answers those of Redis 7.
const respVersion = "7.0.0"

// control answers a command that does not touch keys.
func (c *respConn) control(args [][]byte) {
	var buf [16]byte
	name := string(lower(buf[:0], args[0]))
	switch name {
	case "ping":
		if c.arity(args, 1, 2) {
			c.immediate(func(b []byte) []byte {
				if len(args) == 2 {
					return resp.AppendBulk(b, args[1])
				}
				return resp.AppendSimple(b, "PONG")
			})
		}
	case "echo":
		if c.arity(args, 2, 2) {
			c.immediate(func(b []byte) []byte { return resp.AppendBulk(b, args[1]) })
		}
	case "select":
		switch {
		case !c.arity(args, 2, 2):
		case string(args[1]) == "0":
			c.ok()
		default:
			c.fail("ERR DB index is out of range (batchkv has database 0 only)")
		}
	case "dbsize":
		if c.arity(args, 1, 1) {
			n := c.link.Keys()
			c.immediate(func(b []byte) []byte { return resp.AppendInt(b, int64(n)) })
		}
	case "info":
		info := c.info()
		c.immediate(func(b []byte) []byte { return resp.AppendBulkString(b, info) })
	case "hello":
		c.hello(args)
	case "client":
		c.client(args)
	case "command":
		c.commandInfo(args)
	case "config":
		c.config(args)
	case "reset":
		c.proto, c.name = resp.RESP2, ""
		c.immediate(func(b []byte) []byte { return resp.AppendSimple(b, "RESET") })
	default:
		c.fail(unknownCommand(args))
	}
}

func (c *respConn) ok() {
	c.immediate(func(b []byte) []byte { return resp.AppendSimple(b, "OK") })
}

// unknownCommand is Redis's error for a command it does not know.
func unknownCommand(args [][]byte) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "ERR unknown command '%s', with args beginning with: ", printable(args[0]))
	for _, a := range args[1:min(len(args), 4)] {
		fmt.Fprintf(&sb, "'%s' ", printable(a))
	}
	return sb.String()
}

// printable is b, cut to 64 bytes, with bytes outside printable ASCII and
// quotes as '?', for an error message.
func printable(b []byte) string {
	out := []byte(truncate(string(b), 64))
	for i, ch := range out {
		if ch < 0x20 || ch > 0x7e || ch == '\'' {
			out[i] = '?'
		}
	}
	return string(out)
}

// hello answers HELLO [protover [AUTH user pass] [SETNAME name]].
func (c *respConn) hello(args [][]byte) {
	proto := c.proto
	if len(args) > 1 {
		v, err := strconv.Atoi(string(args[1]))
		if err != nil || v < resp.RESP2 || v > resp.RESP3 {
			c.fail("NOPROTO unsupported protocol version")
			return
		}
		proto = v
	}
	name := c.name
	for i := 2; i < len(args); i++ {
		var buf [16]byte
		switch opt := string(lower(buf[:0], args[i])); {
		case opt == "auth":
			c.fail("ERR AUTH is not supported: batchkv authenticates clients by TLS certificate")
			return
		case opt == "setname" && i+1 < len(args):
			name = string(args[i+1])
			i++
		default:
			c.fail("ERR syntax error in HELLO option '" + printable(args[i]) + "'")
			return
		}
	}
	c.proto, c.name = proto, name
	id := c.id
	c.immediate(func(b []byte) []byte {
		b = resp.AppendMap(b, 7, proto)
		b = resp.AppendBulkString(b, "server")
		b = resp.AppendBulkString(b, "redis")
		b = resp.AppendBulkString(b, "version")
		b = resp.AppendBulkString(b, respVersion)
		b = resp.AppendBulkString(b, "proto")
		b = resp.AppendInt(b, int64(proto))
		b = resp.AppendBulkString(b, "id")
		b = resp.AppendInt(b, id)
		b = resp.AppendBulkString(b, "mode")
		b = resp.AppendBulkString(b, "standalone")
		b = resp.AppendBulkString(b, "role")
		b = resp.AppendBulkString(b, "master")
		b = resp.AppendBulkString(b, "modules")
		return resp.AppendArray(b, 0)
	})
}

// client answers CLIENT SETNAME, GETNAME, SETINFO, ID and INFO.
func (c *respConn) client(args [][]byte) {
	if !c.arity(args, 2, -1) {
		return
	}
	var buf [16]byte
	switch sub := string(lower(buf[:0], args[1])); {
	case sub == "setname" && len(args) == 3:
		c.name = string(args[2])
		c.ok()
	case sub == "getname" && len(args) == 2:
		name := c.name
		c.immediate(func(b []byte) []byte {
			if name == "" {
				return resp.AppendNull(b, c.proto)
			}
			return resp.AppendBulkString(b, name)
		})
	case sub == "setinfo" && len(args) == 4:
		c.ok()
	case sub == "id" && len(args) == 2:
		id := c.id
		c.immediate(func(b []byte) []byte { return resp.AppendInt(b, id) })
	case sub == "info" && len(args) == 2:
		info := fmt.Sprintf("id=%d addr=%s laddr=%s name=%s db=0 resp=%d\n",
			c.id, c.raw.RemoteAddr(), c.raw.LocalAddr(), c.name, c.proto)
		c.immediate(func(b []byte) []byte { return resp.AppendBulkString(b, info) })
	default:
		c.fail("ERR unknown subcommand or wrong number of arguments for 'client|" + printable(args[1]) + "'")
	}
}

// respCommands describes the commands for COMMAND: name, arity (negative:
// at least), flags, first key, last key, key step.
var respCommands = []struct {
	name                 string
	arity                int
	flags                []string
	first, last, keyStep int
}{
	{"get", 2, []string{"readonly", "fast"}, 1, 1, 1},
	{"set", -3, []string{"write", "denyoom"}, 1, 1, 1},
	{"setnx", 3, []string{"write", "denyoom", "fast"}, 1, 1, 1},
	{"getset", 3, []string{"write", "denyoom", "fast"}, 1, 1, 1},
	{"mget", -2, []string{"readonly", "fast"}, 1, -1, 1},
	{"mset", -3, []string{"write", "denyoom"}, 1, -1, 2},
	{"del", -2, []string{"write"}, 1, -1, 1},
	{"unlink", -2, []string{"write", "fast"}, 1, -1, 1},
	{"exists", -2, []string{"readonly", "fast"}, 1, -1, 1},
	{"ping", -1, []string{"fast"}, 0, 0, 0},
	{"echo", 2, []string{"fast"}, 0, 0, 0},
	{"select", 2, []string{"loading", "stale", "fast"}, 0, 0, 0},
	{"dbsize", 1, []string{"readonly", "fast"}, 0, 0, 0},
	{"info", -1, []string{"loading", "stale"}, 0, 0, 0},
	{"hello", -1, []string{"noscript", "loading", "stale", "fast", "no_auth"}, 0, 0, 0},
	{"client", -2, []string{"noscript", "loading", "stale"}, 0, 0, 0},
	{"command", -1, []string{"loading", "stale"}, 0, 0, 0},
	{"config", -2, []string{"admin", "noscript", "loading", "stale"}, 0, 0, 0},
	{"quit", -1, []string{"noscript", "loading", "stale", "fast", "no_auth"}, 0, 0, 0},
	{"reset", 1, []string{"noscript", "loading", "stale", "fast", "no_auth"}, 0, 0, 0},
}

// commandInfo answers COMMAND, COMMAND COUNT, COMMAND INFO and COMMAND
// DOCS (an error: redis-cli then shows its own hints).
func (c *respConn) commandInfo(args [][]byte) {
	sub := ""
	if len(args) > 1 {
		var buf [16]byte
		sub = string(lower(buf[:0], args[1]))
	}
	switch sub {
	case "":
		c.immediate(func(b []byte) []byte {
			b = resp.AppendArray(b, len(respCommands))
			for i := range respCommands {
				b = appendCommandInfo(b, i)
			}
			return b
		})
	case "count":
		c.immediate(func(b []byte) []byte { return resp.AppendInt(b, int64(len(respCommands))) })
	case "info":
		names := args[2:]
		c.immediate(func(b []byte) []byte {
			b = resp.AppendArray(b, len(names))
			for _, n := range names {
				b = appendCommandInfoOf(b, strings.ToLower(string(n)), c.proto)
			}
			return b
		})
	default:
		c.fail("ERR COMMAND " + strings.ToUpper(printable(args[1])) + " is not supported")
	}
}

func appendCommandInfoOf(b []byte, name string, proto int) []byte {
	for i := range respCommands {
		if respCommands[i].name == name {
			return appendCommandInfo(b, i)
		}
	}
	return resp.AppendNull(b, proto)
}

func appendCommandInfo(b []byte, i int) []byte {
	cmd := &respCommands[i]
	b = resp.AppendArray(b, 10)
	b = resp.AppendBulkString(b, cmd.name)
	b = resp.AppendInt(b, int64(cmd.arity))
	b = resp.AppendArray(b, len(cmd.flags))
	for _, f := range cmd.flags {
		b = resp.AppendSimple(b, f)
	}
	b = resp.AppendInt(b, int64(cmd.first))
	b = resp.AppendInt(b, int64(cmd.last))
	b = resp.AppendInt(b, int64(cmd.keyStep))
	for range 4 { // ACL categories, tips, key specs, subcommands
		b = resp.AppendArray(b, 0)
	}
	return b
}

// respConfig is what CONFIG GET answers: enough for redis-benchmark and
// common clients to start, and true of batchkv.
var respConfig = [][2]string{
	{"appendonly", "no"},
	{"databases", "1"},
	{"maxmemory", "0"},
	{"maxmemory-policy", "noeviction"},
	{"proto-max-bulk-len", strconv.Itoa(respLimits.MaxBulk)},
	{"save", ""},
}

// config answers CONFIG GET pattern...; CONFIG SET and the rest are
// refused.
func (c *respConn) config(args [][]byte) {
	var buf [16]byte
	if sub := string(lower(buf[:0], args[1])); sub != "get" || len(args) < 3 {
		c.fail("ERR CONFIG " + strings.ToUpper(printable(args[1])) + " is not supported: batchkv is configured by its flags")
		return
	}
	var pairs [][2]string
	for _, kv := range respConfig {
		for _, pat := range args[2:] {
			if ok, _ := path.Match(strings.ToLower(string(pat)), kv[0]); ok {
				pairs = append(pairs, kv)
				break
			}
		}
	}
	proto := c.proto
	c.immediate(func(b []byte) []byte {
		b = resp.AppendMap(b, len(pairs), proto)
		for _, kv := range pairs {
			b = resp.AppendBulkString(b, kv[0])
			b = resp.AppendBulkString(b, kv[1])
		}
		return b
	})
}

// info is what INFO answers.
func (c *respConn) info() string {
	return fmt.Sprintf("# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\nbatchkv:1\r\nuptime_in_seconds:%d\r\n\r\n"+
		"# Clients\r\nconnected_clients:%d\r\n\r\n# Keyspace\r\ndb0:keys=%d,expires=0,avg_ttl=0\r\n",
		respVersion, int64(c.link.Uptime().Seconds()), c.link.Clients(), c.link.Keys())
}
