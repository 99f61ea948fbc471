package frame

import (
	"bytes"
	"testing"
)

// plainRunByBytes is plainRun's definition, a byte at a time.
func plainRunByBytes(b []byte, i int) int {
	for i < len(b) && !stringStop[b[i]] {
		i++
	}
	return i
}

// plainRun stops where the byte-at-a-time loop stops, for every byte value
// at every place in a word and across the word-to-tail boundary, and with
// a second stop byte after the first (a borrow from the first must not
// move the answer).
func TestPlainRunMatchesByteLoop(t *testing.T) {
	for n := range 24 {
		for pos := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte("a"), n)
				b[pos] = byte(c)
				for start := range min(n, 9) {
					if got, want := plainRun(b, start), plainRunByBytes(b, start); got != want {
						t.Fatalf("len %d, byte %#x at %d, from %d: %d, want %d", n, c, pos, start, got, want)
					}
				}
				for _, after := range []byte{0, '"', '\\', 0x1f, 0x20, 0x21, 0x80, 0xff} {
					if pos+1 >= n {
						break
					}
					b2 := bytes.Clone(b)
					b2[pos+1] = after
					if got, want := plainRun(b2, 0), plainRunByBytes(b2, 0); got != want {
						t.Fatalf("len %d, bytes %#x %#x at %d: %d, want %d", n, c, after, pos, got, want)
					}
				}
			}
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	for _, s := range []string{
		"", "a", `abc"`, `0123456789abcdef"`, "\x00\x01\x1f !\"#", `\u00e9 and \" more`,
		"\xff\xfe\x80\x7f\x20\x1f\x22\x5c", "cafe\u0301 ok", "\x21\x21\x21\x21\x21\x21\x21\x21\x1f",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, start uint8) {
		i := min(int(start), len(b))
		if got, want := plainRun(b, i), plainRunByBytes(b, i); got != want {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", b, i, got, want)
		}
	})
}
