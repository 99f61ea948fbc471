package frame

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// asciiPrefix never claims a byte that is not ASCII, and claims all of an
// ASCII slice, whatever its length and wherever the byte is.
func TestASCIIPrefix(t *testing.T) {
	for n := range 100 {
		b := bytes.Repeat([]byte("a"), n)
		if got := asciiPrefix(b); got != n {
			t.Fatalf("all ASCII, length %d: %d", n, got)
		}
		for pos := range n {
			c := bytes.Clone(b)
			c[pos] = 0xC3
			got := asciiPrefix(c)
			if got > pos || got < 0 || !utf8.Valid(c[:got]) || bytes.ContainsFunc(c[:got], func(r rune) bool { return r >= utf8.RuneSelf }) {
				t.Fatalf("length %d, byte at %d: %d", n, pos, got)
			}
		}
	}
}
