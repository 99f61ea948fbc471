package frame

import "unicode/utf8"

// replacement is U+FFFD, the replacement character, in UTF-8.
const replacement = "\uFFFD"

// fixUTF8 returns valid JSON b with every byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD, which is what encoding/json reads such
// a byte as; every other byte is kept. Valid UTF-8, the normal case, costs
// one check and b comes back as it is (fixed false); otherwise the result
// is a new slice. Outside strings valid JSON is ASCII, so only the
// contents of strings (keys included) can change.
func fixUTF8(b []byte) (out []byte, fixed bool) {
	if utf8.Valid(b) {
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
