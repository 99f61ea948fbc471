package frame

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// Header names of MCP 2026-07-28's routing headers, in canonical form.
const (
	// HeaderMethod mirrors a request's method.
	HeaderMethod = "Mcp-Method"
	// HeaderName mirrors params.name (tools/call, prompts/get) or
	// params.uri (resources/read), encoded with [EncodeHeaderValue].
	HeaderName = "Mcp-Name"
	// HeaderParamPrefix starts the name of a header that mirrors a tool
	// argument annotated with x-mcp-header; the annotation's name follows.
	HeaderParamPrefix = "Mcp-Param-"
)

// The markers of an encoded header value: "=?base64?", the padded standard
// Base64 of the value's UTF-8 bytes, "?=". They are lower case and exact.
const (
	sentinelStart = "=?base64?"
	sentinelEnd   = "?="
)

// ErrHeaderValue reports a header value that claims to be encoded (it has
// the exact markers) but whose Base64 is not canonical, or whose bytes are
// not UTF-8. MCP answers it with -32020.
var ErrHeaderValue = errors.New("header value: invalid =?base64?…?= encoding")

// EncodeHeaderValue returns how MCP 2026-07-28 carries s in Mcp-Name and
// Mcp-Param-* headers: s itself when every byte is printable ASCII (0x20
// to 0x7E), it neither starts nor ends with a space or a tab, and it does
// not look encoded; otherwise "=?base64?" + the padded standard Base64 of
// its bytes + "?=". The empty string stays empty.
func EncodeHeaderValue(s string) string {
	if headerSafe(s) {
		return s
	}
	return sentinelStart + base64.StdEncoding.EncodeToString([]byte(s)) + sentinelEnd
}

// DecodeHeaderValue reverses [EncodeHeaderValue] on a received value
// (already trimmed of surrounding whitespace, as net/http does): a value
// with the exact lower-case markers is decoded, which fails with
// [ErrHeaderValue] unless its Base64 is canonical and padded and its bytes
// are UTF-8; any other value, "=?BASE64?…?=" included, is literal.
func DecodeHeaderValue(v string) (string, error) {
	if !encoded(v) {
		return v, nil
	}
	b64 := v[len(sentinelStart) : len(v)-len(sentinelEnd)]
	if strings.ContainsAny(b64, "\r\n") { // which the decoder would skip
		return "", ErrHeaderValue
	}
	b, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || !utf8.Valid(b) {
		return "", ErrHeaderValue
	}
	return string(b), nil
}

// headerSafe reports whether s can be sent verbatim.
func headerSafe(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	return !encoded(s)
}

// encoded reports whether v has the markers of an encoded value.
func encoded(v string) bool {
	return len(v) >= len(sentinelStart)+len(sentinelEnd) &&
		strings.HasPrefix(v, sentinelStart) && strings.HasSuffix(v, sentinelEnd)
}
