package frame_test

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestEncodeHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"get_weather", "get_weather"},
		{"file:///tmp/a b.txt", "file:///tmp/a b.txt"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="}, // the spec's example
		{" lead", "=?base64?IGxlYWQ=?="},
		{"trail ", "=?base64?dHJhaWwg?="},
		{"tab\there", "=?base64?dGFiCWhlcmU=?="},
		{"line\nbreak", "=?base64?bGluZQpicmVhaw==?="},
		{"=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="}, // looks encoded: encoded
		{"=?BASE64?abc?=", "=?BASE64?abc?="},                  // the markers are exact
		{"\x7f", "=?base64?fw==?="},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got := frame.EncodeHeaderValue(tt.in)
			is.Equal(got, tt.want)
			back, err := frame.DecodeHeaderValue(got)
			is.NoErr(err)
			is.Equal(back, tt.in) // round trip
		})
	}
}

func TestDecodeHeaderValueRefusesBadEncodings(t *testing.T) {
	for _, v := range []string{
		"=?base64?SGVsbG8?=",    // unpadded
		"=?base64?SGVsbG9=?=",   // non-canonical padding bits
		"=?base64?!!!!?=",       // not Base64
		"=?base64?/w==?=",       // 0xff: not UTF-8
		"=?base64?SGVs bG8=?=",  // a space inside
		"=?base64?SGVsbG8=\n?=", // a newline inside
	} {
		t.Run(v, func(t *testing.T) {
			is := is.New(t)
			_, err := frame.DecodeHeaderValue(v)
			is.True(errors.Is(err, frame.ErrHeaderValue))
		})
	}
	is := is.New(t)
	got, err := frame.DecodeHeaderValue("=?base64??=") // the empty string, encoded
	is.NoErr(err)
	is.Equal(got, "")
}

func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"", "x", "Hello, 世界", " a", "=?base64?YQ==?=", "=?base64??=", "\xff", "a\r\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := frame.EncodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("encoded %q as %q: byte %#x is not printable ASCII", s, enc, c)
			}
		}
		dec, err := frame.DecodeHeaderValue(enc)
		switch {
		case err != nil && !errors.Is(err, frame.ErrHeaderValue):
			t.Fatalf("decode %q: %v", enc, err)
		case err != nil:
			// Only bytes that are not UTF-8 fail to come back.
			if utf8.ValidString(s) {
				t.Fatalf("%q encoded as %q does not decode: %v", s, enc, err)
			}
		case dec != s:
			t.Fatalf("%q encoded as %q decodes to %q", s, enc, dec)
		}
		_, _ = frame.DecodeHeaderValue(s) // any received value: no panic
	})
}
