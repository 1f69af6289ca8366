package transport

import (
	"encoding/binary"
	"fmt"
)

// hashicorp/raft's RPC types, the byte before each request.
const (
	rpcInstallSnapshot = 2
	rpcLastType        = 4 // RequestPreVote
)

// scanner follows a stream of Raft messages in msgpack, as a Read passes
// its bytes on, and refuses what a peer must not send (Limits). It keeps
// no message: only where it is in one, what the container it is in has
// left, and the few bytes of a token's header or a map key.
//
// Besides the Limits, it refuses shapes that hashicorp/raft never sends
// and that would let a claim past them: a request that is not a map, an
// array element that is not a map or nil (a struct decodes from an array
// by position), a map key that is not a string of 1 to maxKeyBytes ASCII
// bytes, and a time (the value of a key AppendedAt, or a msgpack
// timestamp anywhere) longer than a time. Only the value of a key Data
// (an entry's) may be longer than MaxField.
type scanner struct {
	lim      Limits
	requests bool // an accepted connection: type bytes, snapshots

	state   scanState
	first   byte              // the token's first byte
	hdr     [9]byte           // its header bytes after the first
	hlen    int               // of hdr, gathered
	hneed   int               // of hdr, needed
	skip    int64             // payload bytes left (or a snapshot's data)
	stack   []level           // the arrays and maps the next token is in
	msg     int64             // bytes of the current message so far
	rpc     byte              // the current request's type
	key     [maxKeyBytes]byte // the map key being read
	keyLen  int               // of key, bytes read
	role    keyRole           // what the key just read makes of the next value
	size    int64             // an InstallSnapshot request's Size
	valRole keyRole           // the role of the value whose payload is being read
	kind    byte              // the kind of the token being read
}

type scanState uint8

const (
	stType    scanState = iota // a request's type byte
	stToken                    // a token's first byte
	stHeader                   // a token's header bytes
	stPayload                  // a string's, binary's or extension's bytes
	stData                     // a snapshot's data
	stEnd                      // after a snapshot: the connection is done
)

// level is an array or a map the scanner is in.
type level struct {
	left  int64 // items left; a map's pairs count twice
	isMap bool
}

// keyRole is what a map key makes of its value.
type keyRole uint8

const (
	roleNone keyRole = iota
	roleKey          // the token is a map key
	roleTime         // the value is a time
	roleSize         // the value is an InstallSnapshot's Size
	roleData         // the value is an entry's data
)

// Token kinds.
const (
	kScalar byte = iota
	kInt
	kStr
	kExt
	kArray
	kMap
)

// newScanner returns a scanner of requests (an accepted connection) or of
// answers (a dialled one).
func newScanner(lim Limits, requests bool) *scanner {
	s := &scanner{lim: lim, requests: requests, state: stToken}
	if requests {
		s.state = stType
	}
	return s
}

// ended reports whether the stream is over: a connection carries one
// InstallSnapshot, as hashicorp/raft's leaders send it, and nothing after.
func (s *scanner) ended() bool { return s.state == stEnd }

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// scan follows p, and returns how many of its bytes belong to the stream
// (fewer than len(p) only once it has ended), or an error for the first
// byte that breaks a rule.
func (s *scanner) scan(p []byte) (int, error) {
	i := 0
	for i < len(p) {
		var err error
		switch s.state {
		case stEnd:
			return i, nil
		case stType:
			s.msg, s.size, s.rpc = 1, 0, p[i]
			i++
			if s.rpc > rpcLastType {
				return i, refuse("unknown RPC type %d", s.rpc)
			}
			s.state = stToken
		case stToken:
			if err = s.count(1); err == nil {
				err = s.startToken(p[i])
			}
			i++
		case stHeader:
			n := min(s.hneed-s.hlen, len(p)-i)
			if err = s.count(int64(n)); err != nil {
				break
			}
			s.hlen += copy(s.hdr[s.hlen:s.hneed], p[i:i+n])
			i += n
			if s.hlen == s.hneed {
				err = s.endHeader()
			}
		case stPayload:
			n := int(min(s.skip, int64(len(p)-i)))
			if err = s.count(int64(n)); err != nil {
				break
			}
			if s.valRole == roleKey {
				for _, c := range p[i : i+n] {
					if c >= 0x80 {
						return i, refuse("a map key with byte 0x%02x", c)
					}
				}
				s.keyLen += copy(s.key[s.keyLen:], p[i:i+n])
			}
			s.skip -= int64(n)
			i += n
			if s.skip == 0 {
				err = s.endPayload()
			}
		case stData:
			n := int(min(s.skip, int64(len(p)-i)))
			s.skip -= int64(n)
			i += n
			if s.skip == 0 {
				s.state = stEnd
			}
		}
		if err != nil {
			return i, err
		}
	}
	return i, nil
}

// count adds n bytes to the message.
func (s *scanner) count(n int64) error {
	s.msg += n
	if s.msg > s.lim.MaxMessage {
		return refuse("message over %d bytes", s.lim.MaxMessage)
	}
	return nil
}

// startToken reads a token's first byte: what it is, where it may be, and
// how many header bytes follow.
func (s *scanner) startToken(b byte) error {
	s.first, s.hlen = b, 0
	s.valRole = s.slotRole()
	kind, hneed, err := classify(b)
	if err != nil {
		return err
	}
	s.kind, s.hneed = kind, hneed
	if err := s.allowed(kind, b); err != nil {
		return err
	}
	if hneed == 0 {
		return s.endHeader()
	}
	s.state = stHeader
	return nil
}

// slotRole returns the role of the token about to start, and checks
// nothing: whether it is a map key, or a value a key gave a role to.
func (s *scanner) slotRole() keyRole {
	if len(s.stack) == 0 {
		return roleNone
	}
	switch top := s.stack[len(s.stack)-1]; {
	case !top.isMap:
		return roleNone
	case top.left%2 == 0:
		return roleKey
	}
	return s.role
}

// allowed checks the shapes hashicorp/raft sends.
func (s *scanner) allowed(kind, b byte) error {
	nilValue := b == 0xc0
	switch {
	case len(s.stack) == 0:
		if s.requests && kind != kMap {
			return refuse("a request that is not a map (0x%02x)", b)
		}
	case !s.stack[len(s.stack)-1].isMap:
		if kind != kMap && !nilValue {
			return refuse("an array element that is not a map (0x%02x)", b)
		}
	case s.valRole == roleKey:
		if kind != kStr {
			return refuse("a map key that is not a string (0x%02x)", b)
		}
	case s.valRole == roleTime:
		if kind != kStr && kind != kExt && !nilValue {
			return refuse("a time that is not a string or timestamp (0x%02x)", b)
		}
	case s.valRole == roleSize:
		if kind != kInt && !nilValue {
			return refuse("a snapshot size that is not an integer (0x%02x)", b)
		}
	}
	return nil
}

// classify returns a first byte's token kind and how many header bytes
// follow it: a length, an extension's type, or a number's bytes.
func classify(b byte) (kind byte, hneed int, err error) {
	switch {
	case b <= 0x7f, b >= 0xe0:
		return kInt, 0, nil
	case b <= 0x8f:
		return kMap, 0, nil
	case b <= 0x9f:
		return kArray, 0, nil
	case b <= 0xbf:
		return kStr, 0, nil
	}
	switch b {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return kScalar, 0, nil
	case 0xc4, 0xd9: // bin8, str8
		return kStr, 1, nil
	case 0xc5, 0xda:
		return kStr, 2, nil
	case 0xc6, 0xdb:
		return kStr, 4, nil
	case 0xc7: // ext8: length, type
		return kExt, 2, nil
	case 0xc8:
		return kExt, 3, nil
	case 0xc9:
		return kExt, 5, nil
	case 0xca: // float32
		return kScalar, 4, nil
	case 0xcb:
		return kScalar, 8, nil
	case 0xcc, 0xd0: // uint8, int8
		return kInt, 1, nil
	case 0xcd, 0xd1:
		return kInt, 2, nil
	case 0xce, 0xd2:
		return kInt, 4, nil
	case 0xcf, 0xd3:
		return kInt, 8, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1..16: type
		return kExt, 1, nil
	case 0xdc: // array16
		return kArray, 2, nil
	case 0xdd:
		return kArray, 4, nil
	case 0xde: // map16
		return kMap, 2, nil
	case 0xdf:
		return kMap, 4, nil
	}
	return 0, 0, refuse("byte 0x%02x, which msgpack never uses", b)
}

// tokenLen returns a string's, array's or map's length: fixed, when the
// token has no header, else its header's.
func (s *scanner) tokenLen(fixed byte) int64 {
	if s.hneed == 0 {
		return int64(fixed)
	}
	return s.length(s.hneed)
}

// length reads the big-endian length of a header's first n bytes.
func (s *scanner) length(n int) int64 {
	switch n {
	case 1:
		return int64(s.hdr[0])
	case 2:
		return int64(binary.BigEndian.Uint16(s.hdr[:2]))
	}
	return int64(binary.BigEndian.Uint32(s.hdr[:4]))
}

// endHeader acts on a token whose header is whole.
func (s *scanner) endHeader() error {
	s.state = stToken
	switch s.kind {
	case kScalar:
		if s.valRole == roleSize { // nil: go-msgpack sets the zero value
			s.size = 0
		}
		return s.endValue()
	case kInt:
		if s.valRole == roleSize {
			s.size = s.intValue()
		}
		return s.endValue()
	case kArray, kMap:
		return s.open(s.tokenLen(s.first&0x0f), s.kind == kMap)
	case kStr:
		return s.payload(s.tokenLen(s.first & 0x1f))
	}
	// kExt: a fixext's length is in its first byte; others' before the type.
	var n int64
	var typ byte
	if s.first >= 0xd4 && s.first <= 0xd8 {
		n, typ = int64(1)<<(s.first-0xd4), s.hdr[0]
	} else {
		n, typ = s.length(s.hneed-1), s.hdr[s.hneed-1]
	}
	if (typ == 0xff || s.valRole == roleTime) && n > maxTimeBytes {
		return refuse("a time of %d bytes", n)
	}
	return s.payload(n)
}

// payload starts a value's n bytes.
func (s *scanner) payload(n int64) error {
	switch {
	case s.valRole == roleKey && (n == 0 || n > maxKeyBytes):
		return refuse("a map key of %d bytes", n)
	case s.valRole == roleData && n > s.lim.MaxBytes:
		return refuse("an entry's data of %d bytes, over %d", n, s.lim.MaxBytes)
	case s.valRole != roleData && s.valRole != roleKey && n > s.lim.MaxField:
		return refuse("a value of %d bytes, over %d", n, s.lim.MaxField)
	case s.msg+n > s.lim.MaxMessage:
		return refuse("a value of %d bytes in a message over %d bytes", n, s.lim.MaxMessage)
	case s.valRole == roleTime && n > maxTimeBytes:
		return refuse("a time of %d bytes", n)
	}
	s.keyLen = 0
	s.skip = n
	if n == 0 {
		return s.endPayload()
	}
	s.state = stPayload
	return nil
}

// endPayload ends a string, binary or extension value.
func (s *scanner) endPayload() error {
	s.state = stToken
	if s.valRole == roleKey {
		s.role = roleNone
		switch key := string(s.key[:s.keyLen]); {
		case key == "Data":
			s.role = roleData
		case key == "AppendedAt":
			s.role = roleTime
		case key == "Size" && len(s.stack) == 1 && s.requests && s.rpc == rpcInstallSnapshot:
			s.role = roleSize
		}
		return s.endItem()
	}
	return s.endValue()
}

// open enters an array or map of n elements (pairs).
func (s *scanner) open(n int64, isMap bool) error {
	switch {
	case n > s.lim.MaxItems:
		return refuse("%d elements in one array or map, over %d", n, s.lim.MaxItems)
	case len(s.stack) >= s.lim.MaxDepth:
		return refuse("arrays and maps nested over %d deep", s.lim.MaxDepth)
	}
	if n == 0 {
		return s.endValue()
	}
	if isMap {
		n *= 2
	}
	s.stack = append(s.stack, level{left: n, isMap: isMap})
	return nil
}

// endValue ends a value (not a key): the role its key gave it is spent.
func (s *scanner) endValue() error {
	s.role = roleNone
	return s.endItem()
}

// endItem counts an item of the container it was in, closing the
// containers it fills, and ends the message once the outermost is done.
func (s *scanner) endItem() error {
	for len(s.stack) > 0 {
		top := &s.stack[len(s.stack)-1]
		top.left--
		if top.left > 0 {
			return nil
		}
		s.stack = s.stack[:len(s.stack)-1]
		s.role = roleNone
	}
	return s.endMessage()
}

// endMessage follows the end of a message: the next request's type byte,
// the next answer, or an InstallSnapshot's data.
func (s *scanner) endMessage() error {
	if !s.requests {
		s.msg = 0
		s.state = stToken
		return nil
	}
	s.state = stType
	if s.rpc == rpcInstallSnapshot {
		s.state, s.skip = stEnd, max(s.size, 0)
		if s.skip > 0 {
			s.state = stData
		}
	}
	return nil
}

// intValue decodes an integer token as go-msgpack's DecodeInt64 does.
func (s *scanner) intValue() int64 {
	b := s.first
	switch {
	case b <= 0x7f:
		return int64(b)
	case b >= 0xe0:
		return int64(int8(b))
	}
	h := s.hdr[:s.hneed]
	switch b {
	case 0xcc:
		return int64(h[0])
	case 0xcd:
		return int64(binary.BigEndian.Uint16(h))
	case 0xce:
		return int64(binary.BigEndian.Uint32(h))
	case 0xcf, 0xd3:
		return int64(binary.BigEndian.Uint64(h))
	case 0xd0:
		return int64(int8(h[0]))
	case 0xd1:
		return int64(int16(binary.BigEndian.Uint16(h)))
	}
	return int64(int32(binary.BigEndian.Uint32(h))) // 0xd2
}
