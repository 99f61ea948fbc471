package frame_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ufffd is U+FFFD in UTF-8, what encoding/json reads an invalid byte as.
const ufffd = "\xef\xbf\xbd"

func TestParseReplacesInvalidUTF8(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"lone continuation byte", `{"jsonrpc":"2.0","id":1,"result":{"text":"a` + "\x80" + `b"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"text":"a` + ufffd + `b"}}`},
		{"0xff", `{"a":"` + "\xff" + `"}`, `{"a":"` + ufffd + `"}`},
		{"truncated sequence: one per byte", `{"a":"` + "\xe2\x82" + `x"}`, `{"a":"` + ufffd + ufffd + `x"}`},
		{"truncated at the end of the string", `{"a":"` + "\xf0\x9f\x98" + `"}`, `{"a":"` + ufffd + ufffd + ufffd + `"}`},
		{"UTF-8 encoded surrogate", `{"a":"` + "\xed\xa0\x80" + `"}`, `{"a":"` + ufffd + ufffd + ufffd + `"}`},
		{"overlong encoding", `{"a":"` + "\xc0\xaf" + `"}`, `{"a":"` + ufffd + ufffd + `"}`},
		{"beyond U+10FFFF", `{"a":"` + "\xf4\x90\x80\x80" + `"}`, `{"a":"` + ufffd + ufffd + ufffd + ufffd + `"}`},
		{"in a key", `{"` + "k\xfe" + `":1,"b":"` + "\xff" + `"}`, `{"` + "k" + ufffd + `":1,"b":"` + ufffd + `"}`},
		{"valid neighbours kept", `{"a":"é` + "\xff" + `€😀` + ufffd + `"}`, `{"a":"é` + ufffd + `€😀` + ufffd + `"}`},
		{"escapes untouched", `{"a":"\ud800\u00e9` + "\x80" + `\n"}`, `{"a":"\ud800\u00e9` + ufffd + `\n"}`},
		{"spacing and numbers untouched", `{ "n" : 1.50 , "s" : "` + "\xff" + `" }`, `{ "n" : 1.50 , "s" : "` + ufffd + `" }`},
		{"pretty-printed and invalid", "{\n  \"a\": \"\xff\",\n  \"n\": 1.50\n}", `{"a":"` + ufffd + `","n":1.50}`},
		{"valid UTF-8 untouched", `{"a":"日本語 ` + ufffd + `"}`, `{"a":"日本語 ` + ufffd + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			for _, parse := range []func([]byte) (frame.Message, error){frame.Parse, frame.ParseOwned} {
				m, err := parse([]byte(tt.in))
				is.NoErr(err)
				is.Equal(m.String(), tt.want)
				is.True(utf8.Valid(m.Bytes()))
				is.True(json.Valid(m.Bytes()))
				is.Equal(decodeJSON(t, m.Bytes()), decodeJSON(t, []byte(tt.in))) // what encoding/json reads
			}
		})
	}
}

func TestParseInvalidUTF8OutsideStrings(t *testing.T) {
	is := is.New(t)
	_, err := frame.Parse([]byte("{\"a\":1\xff}"))
	is.Equal(err, frame.ErrSyntax)
}

func TestParseKeepsValidUTF8Buffer(t *testing.T) {
	is := is.New(t)
	b := []byte(`{"jsonrpc":"2.0","method":"x","params":{"t":"é"}}`)
	m, err := frame.ParseOwned(b)
	is.NoErr(err)
	is.Equal(&m.Bytes()[0], &b[0]) // the fast path neither copies nor rewrites
}

func TestInvalidUTF8EverywhereAMessageIsMade(t *testing.T) {
	is := is.New(t)
	bad := "\xff"

	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	n, err := m.Set("result.text", []byte(`"`+bad+`"`))
	is.NoErr(err)
	is.Equal(n.String(), `{"jsonrpc":"2.0","id":1,"result":{"text":"`+ufffd+`"}}`)
	n, err = m.Set("result.k"+bad, []byte(`1`))
	is.NoErr(err)
	is.True(utf8.Valid(n.Bytes()))

	e := frame.ErrorResponseData("1", frame.CodeInternalError, "x"+bad, []byte(`{"d":"`+bad+`"}`))
	is.Equal(e.String(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x\ufffd","data":{"d":"`+ufffd+`"}}}`)
	r := frame.ResultResponse("1", []byte(`{"t":"`+bad+`"}`))
	is.Equal(r.String(), `{"jsonrpc":"2.0","id":1,"result":{"t":"`+ufffd+`"}}`)
	e = frame.ErrorResponse(frame.ID(`"a`+bad+`"`), frame.CodeInvalidRequest, "too large") // an id probed from a cut line
	is.Equal(e.String(), `{"jsonrpc":"2.0","id":"a`+ufffd+`","error":{"code":-32600,"message":"too large"}}`)

	rd := frame.NewReader(strings.NewReader(`{"jsonrpc":"2.0","method":"m","params":{"t":"`+bad+`"}}`+"\n"), 0)
	got, err := rd.Read()
	is.NoErr(err)
	is.Equal(got.String(), `{"jsonrpc":"2.0","method":"m","params":{"t":"`+ufffd+`"}}`)
}

// decodeJSON decodes b as encoding/json does, numbers kept as written.
func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot decode %q: %v", b, err)
	}
	return v
}

// replaceInvalidUTF8 is the rule, written out plainly: each byte that does
// not start a valid UTF-8 sequence becomes U+FFFD.
func replaceInvalidUTF8(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, ufffd...)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// checkAccepted checks what every message frame hands out must be: one
// line of JSON that encoding/json accepts, in valid UTF-8. in is what it
// was parsed from: where in was one line, every byte of it is kept but the
// invalid ones, and encoding/json reads the same value from both.
func checkAccepted(t *testing.T, in, out []byte) {
	t.Helper()
	if !checkOneLine(t, out) {
		return
	}
	in = bytes.TrimSpace(in)
	if bytes.ContainsAny(in, "\r\n") {
		return // compacted: bytes move
	}
	if want := replaceInvalidUTF8(in); !bytes.Equal(out, want) {
		t.Fatalf("%q gave %q, want %q", in, out, want)
	}
	if a, b := decodeJSON(t, in), decodeJSON(t, out); !reflect.DeepEqual(a, b) {
		t.Fatalf("%q and %q decode differently: %v, %v", in, out, a, b)
	}
}

// checkOneLine checks that out is one line of JSON that encoding/json
// accepts, in valid UTF-8. It reports false for JSON nested deeper than
// encoding/json allows, which it cannot judge.
func checkOneLine(t *testing.T, out []byte) bool {
	t.Helper()
	if bytes.ContainsAny(out, "\r\n") || !utf8.Valid(out) {
		t.Fatalf("%q is not one line of UTF-8", out)
	}
	if !json.Valid(out) {
		if depth(out) > 10000 {
			return false // encoding/json's nesting limit, not a fault
		}
		t.Fatalf("%q is not JSON for encoding/json", out)
	}
	return true
}

// depth returns how deeply b nests (an overestimate: brackets in strings
// count too).
func depth(b []byte) int {
	d, most := 0, 0
	for _, c := range b {
		switch c {
		case '[', '{':
			d++
			most = max(most, d)
		case ']', '}':
			d--
		}
	}
	return most
}
