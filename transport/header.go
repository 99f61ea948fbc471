package transport

import (
	"errors"
	"strings"
)

// Errors returned by [ParseHeader].
var (
	// ErrHeaderFormat means the flag value has no ':' separating name and
	// value.
	ErrHeaderFormat = errors.New("invalid header format (want 'Name: Value')")
	// ErrHeaderName means the name is empty or not an RFC 7230 token.
	ErrHeaderName = errors.New("invalid header name")
	// ErrHeaderValue means the value holds a control character (CR, LF, NUL,
	// or any other except horizontal tab), which could split or smuggle
	// headers.
	ErrHeaderValue = errors.New("forbidden control character in header value")
)

// ParseHeader parses one -H/--header flag value, "Name: Value". It splits on
// the first ':', trims spaces and tabs on both sides of each part and
// validates the result: the name must be a non-empty RFC 7230 token, the
// value must hold no control character other than horizontal tab (so no CR,
// LF or NUL). An empty value is allowed. Errors wrap [ErrHeaderFormat],
// [ErrHeaderName] or [ErrHeaderValue].
//
// The name is returned as written; [net/http.Header.Set] canonicalises it.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", ErrHeaderFormat
	}
	name = strings.Trim(name, " \t")
	value = strings.Trim(value, " \t")
	if !isToken(name) {
		return "", "", ErrHeaderName
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return "", "", ErrHeaderValue
		}
	}
	return name, value, nil
}

// isToken reports whether s is an RFC 9110 token, what a header field's
// name must be: one or more of the visible ASCII characters but the
// delimiters "(),/:;<=>?@[\\]{}.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
