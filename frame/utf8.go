package frame

import (
	"encoding/binary"
	"unicode/utf8"
)

// replacement is U+FFFD, the replacement character, in UTF-8.
const replacement = "\uFFFD"

// fixUTF8 returns valid JSON b with every byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD, which is what encoding/json reads such
// a byte as; every other byte is kept. Valid UTF-8, the normal case, costs
// one check and b comes back as it is (fixed false); otherwise the result
// is a new slice. Outside strings valid JSON is ASCII, so only the
// contents of strings (keys included) can change.
func fixUTF8(b []byte) (out []byte, fixed bool) {
	i := asciiPrefix(b)
	if i == len(b) || utf8.Valid(b[i:]) { // b[:i] is ASCII: b[i] starts a character
		return b, false
	}
	out = make([]byte, 0, len(b)+len(b)/8+8)
	start := 0 // the valid bytes not yet copied begin here
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, b[start:i]...)
			out = append(out, replacement...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(out, b[start:]...), true
}

// asciiPrefix returns how long a start of b is known to be ASCII: len(b)
// when all of it is, else a point at or before the first byte that is not.
// It reads eight bytes at a time, which for the mostly ASCII JSON of MCP is
// cheaper than utf8.Valid alone (whose byte-at-a-time tail costs as much
// as a hundred bytes of its word-at-a-time middle).
func asciiPrefix(b []byte) int {
	const hi = 0x8080808080808080
	i := 0
	for ; i+64 <= len(b); i += 64 {
		c := b[i : i+64 : i+64]
		w := binary.LittleEndian.Uint64(c) | binary.LittleEndian.Uint64(c[8:]) |
			binary.LittleEndian.Uint64(c[16:]) | binary.LittleEndian.Uint64(c[24:]) |
			binary.LittleEndian.Uint64(c[32:]) | binary.LittleEndian.Uint64(c[40:]) |
			binary.LittleEndian.Uint64(c[48:]) | binary.LittleEndian.Uint64(c[56:])
		if w&hi != 0 {
			return i
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:i+8])&hi != 0 {
			return i
		}
	}
	if i == len(b) {
		return i
	}
	if len(b) >= 8 { // the last word overlaps what was read: no byte-at-a-time tail
		if binary.LittleEndian.Uint64(b[len(b)-8:])&hi != 0 {
			return i
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return i
		}
	}
	return i
}
