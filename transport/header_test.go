package transport

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/net/http/httpguts"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		in          string
		name, value string
		err         error
	}{
		{in: "X-Api-Key: secret", name: "X-Api-Key", value: "secret"},
		{in: "  X-Api-Key  :   secret  ", name: "X-Api-Key", value: "secret"},
		{in: "X-Api-Key:\tsecret\t", name: "X-Api-Key", value: "secret"},
		{in: "Authorization: Bearer a:b:c", name: "Authorization", value: "Bearer a:b:c"},
		{in: "X-Empty:", name: "X-Empty", value: ""},
		{in: "X-Empty:   ", name: "X-Empty", value: ""},
		{in: "x-lower: v", name: "x-lower", value: "v"},
		{in: "X-Tab: a\tb", name: "X-Tab", value: "a\tb"},
		{in: "X-Utf8: héllo", name: "X-Utf8", value: "héllo"},
		{in: "!#$%&'*+-.^_`|~09azAZ: v", name: "!#$%&'*+-.^_`|~09azAZ", value: "v"},
		{in: "X-Api-Key secret", err: ErrHeaderFormat},
		{in: "", err: ErrHeaderFormat},
		{in: "X-Bad: a\r\nInjected: x", err: ErrHeaderValue},
		{in: "X-Bad: a\nb", err: ErrHeaderValue},
		{in: "X-Bad: a\rb", err: ErrHeaderValue},
		{in: "X-Bad: a\x00b", err: ErrHeaderValue},
		{in: "X-Bad: a\x7fb", err: ErrHeaderValue},
		{in: "X-Bad: a\x01b", err: ErrHeaderValue},
		{in: "X Bad: v", err: ErrHeaderName},
		{in: "(comment): v", err: ErrHeaderName},
		{in: "X-Del\x7f: v", err: ErrHeaderName},
		{in: ": v", err: ErrHeaderName},
		{in: "   : v", err: ErrHeaderName},
		{in: "X-Bad\r\n: v", err: ErrHeaderName},
		{in: "Näme: v", err: ErrHeaderName},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			name, value, err := ParseHeader(tt.in)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err)) // the right error
				is.Equal(name, "")
				is.Equal(value, "")
				return
			}
			is.NoErr(err)
			is.Equal(name, tt.name)
			is.Equal(value, tt.value)
		})
	}
}

func TestParseHeaderMessages(t *testing.T) {
	is := is.New(t)
	_, _, err := ParseHeader("nocolon")
	is.Equal(err.Error(), "invalid header format (want 'Name: Value')")
	_, _, err = ParseHeader("a b: c")
	is.Equal(err.Error(), "invalid header name")
	_, _, err = ParseHeader("a: b\nc")
	is.Equal(err.Error(), "forbidden control character in header value")
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{
		"X-Api-Key: secret", "  a  :  b  ", "Authorization: Bearer x:y", "X:", ":", "",
		"no colon", "X: a\r\nB: c", "X: \x00", "(c): v", "X\x7f: v", "X: \t", "é: v", "X: é",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, value, err := ParseHeader(s)
		if err != nil {
			if name != "" || value != "" {
				t.Fatalf("error %v with results %q %q", err, name, value)
			}
			if !errors.Is(err, ErrHeaderFormat) && !errors.Is(err, ErrHeaderName) && !errors.Is(err, ErrHeaderValue) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !httpguts.ValidHeaderFieldName(name) {
			t.Fatalf("accepted name %q is not a token", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") || !httpguts.ValidHeaderFieldValue(value) {
			t.Fatalf("accepted value %q has a control character", value)
		}
		if value != strings.Trim(value, " \t") {
			t.Fatalf("value %q not trimmed", value)
		}
		// The pair must survive a trip through a real request.
		req, err := http.NewRequest(http.MethodGet, "http://example.test/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(name, value)
		var sb strings.Builder
		if err := req.Write(&sb); err != nil {
			t.Fatalf("request with %q: %q does not write: %v", name, value, err)
		}
		back, err := http.ReadRequest(bufio.NewReader(strings.NewReader(sb.String())))
		if err != nil {
			t.Fatalf("request with %q: %q does not read back: %v", name, value, err)
		}
		if got := back.Header.Get(name); got != value {
			t.Fatalf("value %q came back as %q", value, got)
		}
	})
}
