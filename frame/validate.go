package frame

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"
)

// DefaultMaxDepth bounds how deeply the objects and arrays of a message may
// nest unless the caller chooses otherwise ([Parser.MaxDepth]): 512 levels,
// the message itself being the first. No MCP message comes near it (the
// deepest the schemas describe is a tool's input schema, a few levels
// under its result); a parser that recurses on its stack (encoding/json
// in Go children, the JSON of Python and JavaScript servers, and gjson
// here) is safe well beyond it.
const DefaultMaxDepth = 512

// ErrTooDeep means a message nests objects and arrays deeper than the
// limit ([DefaultMaxDepth], or [Parser.MaxDepth]). The error [Parse]
// returns for such a message is an *[EnvelopeError] that matches it and
// says who may be waiting for an answer.
var ErrTooDeep = errors.New("JSON nested too deeply")

// uniqueLevels is how many levels of a message's objects may not repeat a
// member name: the envelope (level 1), the objects in it — params, result,
// error — (level 2), and the objects in those — params._meta,
// params.arguments, result._meta, params.capabilities … — (level 3). Those
// are where the gateway's stages read what they decide on; a name given
// twice there would let the gateway, which reads the first, and the peer,
// whose parser may keep the last, see two different messages.
const uniqueLevels = 3

// A Parser parses messages under limits. The zero Parser has the default
// limits; [Parse] and [ParseOwned] use it.
type Parser struct {
	// MaxDepth bounds how deeply a message's objects and arrays may nest;
	// 0 means [DefaultMaxDepth].
	MaxDepth int
}

// Depth returns the nesting limit p applies.
func (p Parser) Depth() int {
	if p.MaxDepth > 0 {
		return p.MaxDepth
	}
	return DefaultMaxDepth
}

// Valid reports whether b is one JSON value that nests no deeper than
// [DefaultMaxDepth]. It does not recurse, whatever b holds.
func Valid(b []byte) bool {
	var s scanner
	return s.scan(b, DefaultMaxDepth, false) == nil
}

// validUnbounded reports whether b is one JSON value, however deeply it
// nests. It does not recurse: its stack of open containers is on the heap,
// a bit per level.
func validUnbounded(b []byte) bool {
	var s scanner
	return s.scan(b, -1, false) == nil
}

// scanner validates JSON in one pass, without recursion. It keeps the
// containers open at the point it reads as a stack of bits (1 for an
// object), and, for the objects of the first [uniqueLevels] levels when it
// is asked to, the member names seen so far, to find a name given twice.
type scanner struct {
	depth    int
	inObject bool      // the innermost open container is an object
	open     [8]uint64 // levels 1 to 512
	more     []uint64  // levels beyond
	names    [uniqueLevels]nameSet
	// path[d] is the name of the member of the object at level d+1 whose
	// value is being read, while that value is a container.
	path [uniqueLevels - 1]string

	env    envelope // what the envelope's members say, while tracking
	member int      // where the value of the envelope member being read starts, or -1
	meta   int      // where the value of params._meta being read starts, or -1
	// metaNames is the name signature (see nameBit) of the members of
	// params._meta read so far.
	metaNames uint64
	dup       string // where a member name first repeated, as a path
	repeated  bool   // a member name repeated (dup says where)
	tooDeep   bool   // a value went past the limit (and was skipped)
	tracking  bool   // names are checked: the message is an object
}

// scan validates b, which must hold no surrounding whitespace worth
// keeping (it may hold some). max bounds the depth (-1: no bound). A value
// past the limit is skipped, only its brackets and strings checked, and
// the scan goes on, so that the members of the envelope after it are still
// seen; the result is then ErrTooDeep unless b is not JSON. With names, the
// member names of the first levels of an object are checked (s.dup).
func (s *scanner) scan(b []byte, max int, names bool) error {
	s.tracking = names && len(b) > 0 && b[0] == '{'
	s.member, s.meta = -1, -1
	var (
		i   int
		c   byte
		ok  bool
		esc bool
		end int
	)
value:
	i = skipSpace(b, i)
	if i >= len(b) {
		return ErrSyntax
	}
	c = b[i]
	switch {
	case c == '{' || c == '[':
		if max >= 0 && s.depth >= max {
			s.tooDeep = true
			if i, ok = skipNested(b, i); !ok {
				return ErrSyntax
			}
			goto next
		}
		s.push(c == '{')
		i = skipSpace(b, i+1)
		if i < len(b) && (b[i] == '}' && c == '{' || b[i] == ']' && c == '[') {
			s.pop()
			i++
			goto next
		}
		if c == '[' {
			goto value
		}
		goto member
	case c == '"':
		if i, _, ok = skipString(b, i+1); !ok {
			return ErrSyntax
		}
		i++
		goto next
	case c == 't':
		if !hasPrefixAt(b, i, "true") {
			return ErrSyntax
		}
		i += 4
		goto next
	case c == 'f':
		if !hasPrefixAt(b, i, "false") {
			return ErrSyntax
		}
		i += 5
		goto next
	case c == 'n':
		if !hasPrefixAt(b, i, "null") {
			return ErrSyntax
		}
		i += 4
		goto next
	default:
		if i, ok = skipNumber(b, i); !ok {
			return ErrSyntax
		}
		goto next
	}

member:
	// b[i] must open a member's name.
	if i >= len(b) || b[i] != '"' {
		return ErrSyntax
	}
	if end, esc, ok = skipString(b, i+1); !ok {
		return ErrSyntax
	}
	if s.tracking && s.depth <= uniqueLevels {
		s.name(b[i+1:end], esc)
	}
	i = skipSpace(b, end+1)
	if i >= len(b) || b[i] != ':' {
		return ErrSyntax
	}
	i = skipSpace(b, i+1)
	if s.tracking {
		switch {
		case s.depth == 1:
			s.member = i // the value of an envelope member starts here
		case s.depth == 2 && s.path[1] == "_meta" && s.path[0] == "params":
			s.meta = i // params is an object, and its _meta's value starts here
		}
	}
	goto value

next:
	// A value ended at b[i-1].
	if s.member >= 0 && s.depth == 1 {
		s.env.member(s.path[0], s.member, unsafe.String(&b[s.member], i-s.member))
		s.member = -1
	}
	if s.meta >= 0 && s.depth == 2 {
		s.env.paramsMeta(s.meta, i-s.meta, b[s.meta] == '{', s.metaNames)
		s.meta = -1
	}
	i = skipSpace(b, i)
	if s.depth == 0 {
		if i != len(b) {
			return ErrSyntax
		}
		if s.tooDeep {
			return ErrTooDeep
		}
		return nil
	}
	if i >= len(b) {
		return ErrSyntax
	}
	if s.inObject {
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
			goto member
		case '}':
			s.pop()
			i++
			goto next
		}
		return ErrSyntax
	}
	switch b[i] {
	case ',':
		i++
		goto value
	case ']':
		s.pop()
		i++
		goto next
	}
	return ErrSyntax
}

// push opens a container one level deeper.
func (s *scanner) push(object bool) {
	d := s.depth // its bit
	s.depth++
	s.inObject = object
	if d >= 64*len(s.open) {
		w := d/64 - len(s.open)
		if w == len(s.more) {
			s.more = append(s.more, 0)
		}
		if object {
			s.more[w] |= 1 << (d % 64)
		} else {
			s.more[w] &^= 1 << (d % 64)
		}
		return
	}
	if object {
		s.open[d/64] |= 1 << (d % 64)
	} else {
		s.open[d/64] &^= 1 << (d % 64)
	}
	if object && s.tracking && s.depth <= uniqueLevels {
		s.names[s.depth-1].reset()
	}
}

// pop closes the innermost container.
func (s *scanner) pop() {
	s.depth--
	s.inObject = s.depth > 0 && s.objectAt(s.depth)
}

// objectAt reports whether the container open at level (1-based) is an
// object.
func (s *scanner) objectAt(level int) bool {
	d := level - 1
	if d >= 64*len(s.open) {
		return s.more[d/64-len(s.open)]&(1<<(d%64)) != 0
	}
	return s.open[d/64]&(1<<(d%64)) != 0
}

// name records the member name raw (its bytes between the quotes) of the
// object at the current level, one of the first uniqueLevels.
func (s *scanner) name(raw []byte, esc bool) {
	n := memberName(raw, esc)
	level := s.depth
	if level == 3 && s.path[1] == "_meta" && s.path[0] == "params" {
		if esc {
			s.metaNames = allNames // escaped: what gjson compares is not sure
		} else {
			s.metaNames |= nameBit(n)
		}
	}
	if s.names[level-1].add(n) && !s.repeated {
		s.repeated, s.dup = true, s.pathTo(n)
	}
	if level <= len(s.path) {
		s.path[level-1] = n
	}
}

// pathTo returns where the member name of the object at the current level
// is, as a dotted path from the envelope ("params._meta.progressToken"; an
// array's element is "[]").
func (s *scanner) pathTo(name string) string {
	var b strings.Builder
	for level := 1; level < s.depth; level++ {
		if !s.objectAt(level) {
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.path[level-1])
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(name)
	return b.String()
}

// memberName returns the name a member's raw bytes spell. A name written
// plainly is returned as a view of raw (it lives as long as the scan); one
// with escapes, or bytes beyond ASCII, is decoded as encoding/json decodes
// it, an invalid byte or lone surrogate becoming U+FFFD — so "\u0069d" is
// "id", and two names only a peer's decoder could tell apart are the same
// here.
func memberName(raw []byte, esc bool) string {
	if !esc {
		plain := true
		for _, c := range raw {
			if c >= 0x80 {
				plain = false
				break
			}
		}
		if plain {
			return unsafe.String(unsafe.SliceData(raw), len(raw))
		}
	}
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, raw...)
	quoted = append(quoted, '"')
	var n string
	if err := json.Unmarshal(quoted, &n); err != nil {
		// Unreachable for a string the scanner accepted; keep the bytes.
		return string(raw)
	}
	return n
}

// allNames is the name signature that may hold any name.
const allNames = ^uint64(0)

// nameBit returns the bit of name in a name signature: the set of the
// bits of an object's member names, so that a name whose bit is not in
// it is none of them (a bit that is there may be another name's). It
// reads three bytes of the name, whatever its length.
func nameBit(name string) uint64 {
	if name == "" {
		return 1
	}
	return 1 << ((uint(len(name))*7 + uint(name[0]) + 3*uint(name[len(name)-1])) % 64)
}

// nameSet is the member names of one object. The first few are compared
// one by one; an object with many members gets a map.
type nameSet struct {
	n     int
	small [8]string
	big   map[string]struct{}
}

func (s *nameSet) reset() {
	s.n = 0
	s.big = nil
}

// add records name and reports whether it was there already.
func (s *nameSet) add(name string) bool {
	if s.big != nil {
		if _, ok := s.big[name]; ok {
			return true
		}
		s.big[name] = struct{}{}
		return false
	}
	for _, seen := range s.small[:s.n] {
		if seen == name {
			return true
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = name
		s.n++
		return false
	}
	s.big = make(map[string]struct{}, 2*len(s.small))
	for _, seen := range s.small {
		s.big[seen] = struct{}{}
	}
	s.big[name] = struct{}{}
	return false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringStop marks the bytes that end a run of plain string content: the
// closing quote, a backslash and the control characters JSON forbids.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// plainRun returns the index of the first byte at or after i that ends a
// run of plain string content (see stringStop), or len(b). It reads eight
// bytes at a time while eight remain, so a long string (a file's text, an
// image's base64) costs a few operations a word instead of a table lookup
// a byte.
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if stop := stopBytes(binary.LittleEndian.Uint64(b[i:])); stop != 0 {
			return i + bits.TrailingZeros64(stop)/8
		}
	}
	for i < len(b) && !stringStop[b[i]] {
		i++
	}
	return i
}

// stopBytes returns a word whose lowest set bit is the high bit of the
// first byte of w, read little-endian, that ends a run of plain string
// content: a quote, a backslash or a control character; 0 when none does.
// Each of the three tests (a byte equal to zero after an XOR, a byte below
// 0x20) is exact up to its first match, where a borrow can start to flag
// bytes above it; the lowest bit of the three together is thus exact.
func stopBytes(w uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	return ((quote-ones)&^quote | (slash-ones)&^slash | (w-ones*0x20)&^w) & highs
}

// skipString reads a string's content from b[i] (after its opening quote)
// and returns the index of its closing quote and whether it holds escapes.
func skipString(b []byte, i int) (end int, esc, ok bool) {
	for {
		i = plainRun(b, i)
		if i >= len(b) {
			return 0, false, false
		}
		switch b[i] {
		case '"':
			return i, esc, true
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+5 >= len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // a control character
			return 0, false, false
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber reads a JSON number at b[i] and returns the index after it.
func skipNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func hasPrefixAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// skipNested passes over the container that opens at b[i], counting its
// brackets and reading its strings but judging nothing else, and returns
// the index after it. It holds nothing per level, however deep the
// container goes.
func skipNested(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case '"':
			end, _, ok := skipString(b, i+1)
			if !ok {
				return 0, false
			}
			i = end
		}
		i++
	}
	return 0, false
}

// depthReason is the reason of the error for a message nested past limit.
func depthReason(limit int) string {
	return "JSON nested deeper than " + strconv.Itoa(limit) + " levels"
}

// CheckUnique checks a JSON document that is not a message — a file the
// user gives, such as serve's --config — as strictly as [Parse] checks a
// message: one JSON value ([ErrSyntax] else), nesting no deeper than
// [DefaultMaxDepth] ([ErrTooDeep] else), whose objects in the first
// three levels name no member twice (else an error naming where, as a
// dotted path). It does not recurse.
func CheckUnique(b []byte) error {
	var s scanner
	switch err := s.scan(bytes.TrimSpace(b), DefaultMaxDepth, true); {
	case errors.Is(err, ErrTooDeep):
		return ErrTooDeep
	case err != nil:
		return ErrSyntax
	case s.repeated:
		return fmt.Errorf("duplicate member %q", s.dup)
	}
	return nil
}
