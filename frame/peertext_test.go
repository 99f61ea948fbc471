package frame_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestPeerText(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"plain", "not found", 200, "not found"},
		{"controls", "a\tb\r\nc\x1b[31md\u0085e", 200, "a b  c [31md e"},
		{"trimmed", "  \n x \t", 200, "x"},
		{"invalid utf-8", "a\xffb", 200, "a\uFFFDb"},
		{"cut ascii", "abcdefghij", 8, "abcde…"},
		{"cut never splits a character", "ab€€€", 8, "ab€…"},
		{"no limit", strings.Repeat("x", 500), 0, strings.Repeat("x", 500)},
		{"limit smaller than the mark", "abcdef", 2, "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got := frame.PeerText(tc.in, tc.limit)
			is.Equal(got, tc.want)
			is.True(utf8.ValidString(got))
		})
	}
}

func FuzzPeerText(f *testing.F) {
	for _, s := range []string{"", "abc", "a\xffb", "€€€€", "\x1b]0;title\x07", strings.Repeat("é", 150)} {
		f.Add(s, 200)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = limit % 1000
		got := frame.PeerText(s, limit)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if strings.ContainsAny(got, "\n\r\t\x1b") {
			t.Fatalf("a control character: %q", got)
		}
		if limit > len("…") && len(got) > limit {
			t.Fatalf("%d bytes over a limit of %d", len(got), limit)
		}
	})
}
