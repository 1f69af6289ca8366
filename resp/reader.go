package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Value is one reply as a client reads it.
type Value struct {
	// Kind is the reply's type byte: '+' simple string, '-' error, ':'
	// integer, '$' bulk string, '*' array, '_' null, '%' map, '~' set, '#'
	// boolean, ',' double, '(' big number, '=' verbatim string, '>' push.
	// A RESP2 null bulk string or array ("$-1", "*-1") reads as '_'.
	Kind byte
	// Str holds a string, error, double, big number or verbatim reply, in
	// a slice of its own.
	Str []byte
	// Int holds an integer reply, and a boolean as 0 or 1.
	Int int64
	// Elems holds an array's, set's or push's elements, and a map's keys
	// and values alternately.
	Elems []Value
}

// Err returns the reply as an error when it is one, else nil.
func (v Value) Err() error {
	if v.Kind == '-' {
		return errors.New(string(v.Str))
	}
	return nil
}

// maxDepth bounds how deeply a reply's aggregates may nest.
const maxDepth = 32

// Reader reads replies from a server. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	lim Limits
}

// NewReader returns a Reader of r; lim bounds the replies it accepts
// (aggregate sizes by MaxArgs, strings by MaxBulk).
func NewReader(r io.Reader, lim Limits) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), lim: lim.withDefaults()}
}

// Read reads one reply. An error reply is a Value of Kind '-', not an
// error; the error is for a broken stream or a reply past the limits.
func (r *Reader) Read() (Value, error) { return r.read(0) }

func (r *Reader) read(depth int) (Value, error) {
	line, err := r.line()
	if err != nil {
		return Value{}, err
	}
	if len(line) == 0 {
		return Value{}, protoErr("empty reply line")
	}
	v := Value{Kind: line[0]}
	body := line[1:]
	switch v.Kind {
	case '+', '-', ',', '(':
		v.Str = append([]byte(nil), body...)
	case ':':
		if v.Int, err = strconv.ParseInt(string(body), 10, 64); err != nil {
			return v, protoErr("bad integer %q", body)
		}
	case '#':
		v.Int = map[bool]int64{true: 1}[string(body) == "t"]
	case '_':
	case '$', '=':
		n, err := r.size(body, r.lim.MaxBulk)
		if err != nil || n < 0 {
			return Value{Kind: '_'}, err
		}
		v.Str = make([]byte, n+2)
		if _, err := io.ReadFull(r.br, v.Str); err != nil {
			return v, err
		}
		if v.Str[n] != '\r' || v.Str[n+1] != '\n' {
			return v, protoErr("bulk reply not followed by CRLF")
		}
		v.Str = v.Str[:n]
	case '*', '%', '~', '>':
		if depth >= maxDepth {
			return v, protoErr("replies nested more than %d deep", maxDepth)
		}
		n, err := r.size(body, r.lim.MaxArgs)
		if err != nil || n < 0 {
			return Value{Kind: '_'}, err
		}
		if v.Kind == '%' {
			if n > r.lim.MaxArgs/2 {
				return v, protoErr("map of %d pairs over the limit", n)
			}
			n *= 2
		}
		v.Elems = make([]Value, n)
		for i := range v.Elems {
			if v.Elems[i], err = r.read(depth + 1); err != nil {
				return v, err
			}
		}
	default:
		return v, protoErr("unknown reply type %q", v.Kind)
	}
	return v, nil
}

// size parses an aggregate or bulk length: -1 for a RESP2 null.
func (r *Reader) size(body []byte, limit int) (int, error) {
	n, err := strconv.Atoi(string(body))
	switch {
	case err != nil || n < -1:
		return 0, protoErr("bad length %q", body)
	case n > limit:
		return 0, protoErr("length %d over the limit of %d", n, limit)
	}
	return n, nil
}

// line reads one CRLF-terminated line, without the CRLF.
func (r *Reader) line() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, protoErr("reply line longer than %d bytes", r.br.Size())
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, protoErr("reply line not ended by CRLF")
	}
	return line[:len(line)-2], nil
}

// String renders v for messages and tests.
func (v Value) String() string {
	switch v.Kind {
	case '+', '-', '$', ',', '(', '=':
		return fmt.Sprintf("%c%q", v.Kind, v.Str)
	case ':', '#':
		return fmt.Sprintf("%c%d", v.Kind, v.Int)
	case '_':
		return "null"
	default:
		s := fmt.Sprintf("%c[", v.Kind)
		for i, e := range v.Elems {
			if i > 0 {
				s += " "
			}
			s += e.String()
		}
		return s + "]"
	}
}
