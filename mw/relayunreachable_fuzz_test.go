package mw

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// FuzzServerSaid: whatever a server answers a refusal with — a body, a
// WWW-Authenticate challenge — the words quoted from it are one valid
// line of at most 200 bytes, with no control character and none of the
// credentials sent, and reading them never panics.
func FuzzServerSaid(f *testing.F) {
	const secret = "s3cr3t-t0ken-value-0123456789"
	for _, seed := range []struct{ body, challenge string }{
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized: Bearer ` + secret + ` rejected"}}`, `Bearer realm="mcp", error="invalid_token"`},
		{`{"error":"invalid_token","error_description":"token expired"}`, `Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource"`},
		{`{"message":"nope"}`, `Basic realm="x"`},
		{`{"error":{"message":""}}`, ""},
		{"<html><head><TITLE>502 Bad Gateway</title></head></html>", ""},
		{"<html><body>no title</body></html>", ""},
		{"\n\n  Not Found \r\n second line", ""},
		{"token " + secret + " is not valid\x1b[31m", "Bearer " + secret},
		{"Authorization: bearer abcdefghijklmnopqrstuvwxyz0123== here", `Bearer error="x", token68abcdefghijklmnop=, realm=y`},
		{strings.Repeat("é", 300), strings.Repeat("Bearer ", 50)},
		{"\xff\xfe bad utf-8 \xc3", "\x00\x01"},
		{"", ""},
	} {
		f.Add([]byte(seed.body), seed.challenge)
	}
	o := &DiagnoseOptions{Header: http.Header{"Authorization": {"Bearer " + secret}}}
	f.Fuzz(func(t *testing.T, body []byte, challenge string) {
		st := &frame.StatusError{Code: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {challenge}}, Body: body}
		for _, said := range []string{o.serverSaid(st), o.safeText(challenge), o.safeText(string(body))} {
			if !utf8.ValidString(said) || len(said) > 200 {
				t.Fatalf("%q: not valid UTF-8 of at most 200 bytes", said)
			}
			if strings.ContainsFunc(said, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }) {
				t.Fatalf("%q: a control character", said)
			}
			if strings.Contains(said, secret) {
				t.Fatalf("%q: the credential sent", said)
			}
		}
		_ = blankBearerTokens(challenge)
	})
}
