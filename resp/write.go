package resp

import "strconv"

// The protocol versions a connection may speak (HELLO 2, HELLO 3).
const (
	RESP2 = 2
	RESP3 = 3
)

// AppendSimple appends a simple string ("+OK"). s must not hold CR or LF.
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendError appends an error reply. msg starts with its code, as in
// "ERR unknown command"; CR and LF in it are replaced by spaces, since an
// error is one line.
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// AppendInt appends an integer reply.
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string.
func AppendBulk(b []byte, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends a bulk string.
func AppendBulkString(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendNull appends the null reply: "$-1" in RESP2, "_" in RESP3.
func AppendNull(b []byte, proto int) []byte {
	if proto >= RESP3 {
		return append(b, '_', '\r', '\n')
	}
	return append(b, '$', '-', '1', '\r', '\n')
}

// AppendArray appends the header of an array of n elements, which the
// caller appends next.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendMap appends the header of a map of n pairs, which the caller
// appends next as key, value, key, value: a RESP3 map, or in RESP2 an
// array of 2n elements.
func AppendMap(b []byte, n int, proto int) []byte {
	if proto >= RESP3 {
		b = append(b, '%')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArray(b, 2*n)
}

// AppendCommand appends a command as an array of bulk strings, as a
// client sends it.
func AppendCommand(b []byte, args ...string) []byte {
	b = AppendArray(b, len(args))
	for _, a := range args {
		b = AppendBulkString(b, a)
	}
	return b
}
