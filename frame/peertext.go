package frame

import (
	"strings"
	"unicode/utf8"
)

// PeerText makes text a peer sent — a server's error message or page, a
// child's stderr line — fit to quote on one line of a terminal or a log:
// valid UTF-8 (a bad byte becomes U+FFFD), every control character (tabs
// and line ends included, and C1 controls) a space, trimmed, and at most
// limit bytes, cut on a character boundary with "…" (counted) when it was
// longer. A limit of 0 or less means no cut.
func PeerText(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if limit <= 0 || len(s) <= limit {
		return s
	}
	n := limit - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)] + "…"
}
