package frame_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// nested returns a request whose params._meta holds n nested arrays.
func nested(n int, id string) []byte {
	var b bytes.Buffer
	b.Grow(2*n + 100)
	b.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"x","_meta":{"k":`)
	b.WriteString(strings.Repeat("[", n))
	b.WriteString(strings.Repeat("]", n))
	b.WriteString(`}}}`)
	return b.Bytes()
}

// TestParseRefusesDeepNestingWithoutRecursion is the attack that killed the
// process: 6,000,000 nested arrays (about 12 MB). Parse must refuse it, say
// whose request it was, and hold little memory doing so.
func TestParseRefusesDeepNestingWithoutRecursion(t *testing.T) {
	is := is.New(t)
	in := nested(6_000_000, `"victim"`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := frame.Parse(in)
	runtime.ReadMemStats(&after)
	is.True(errors.Is(err, frame.ErrTooDeep))
	is.True(errors.Is(err, frame.ErrNotJSONRPC)) // answered as a bad envelope
	var env *frame.EnvelopeError
	is.True(errors.As(err, &env))
	is.Equal(env.Shape, frame.Request)
	is.Equal(env.ID, frame.ID(`"victim"`)) // the request gets its answer
	is.Equal(env.Reason, "JSON nested deeper than 512 levels")
	// Nothing per level: the bytes allocated are far below the input's.
	is.True(after.TotalAlloc-before.TotalAlloc < 1<<20)
	is.True(after.StackInuse < 64<<20)
}

func TestParseDepthLimit(t *testing.T) {
	is := is.New(t)
	// The message is level 1, params 2, _meta 3, k's arrays from 4 on.
	atLimit := nested(frame.DefaultMaxDepth-3, "1")
	m, err := frame.Parse(atLimit)
	is.NoErr(err)
	is.Equal(m.Kind(), frame.Request)
	_, err = frame.Parse(nested(frame.DefaultMaxDepth-2, "1"))
	is.True(errors.Is(err, frame.ErrTooDeep))

	// A parser with a higher limit takes more, nothing beyond.
	p := frame.Parser{MaxDepth: 5000}
	m, err = p.Parse(nested(4000, "1"))
	is.NoErr(err)
	is.Equal(m.Kind(), frame.Request)
	_, err = p.ParseOwned(nested(5000, "1"))
	is.True(errors.Is(err, frame.ErrTooDeep))
}

func TestTooDeepSaysWhoWaits(t *testing.T) {
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	tests := []struct {
		in    string
		shape frame.Kind
		id    frame.ID
	}{
		{`{"jsonrpc":"2.0","id":5,"result":{"x":` + deep + `}}`, frame.Result, "5"},
		{`{"result":{"x":` + deep + `},"id":"late","jsonrpc":"2.0"}`, frame.Result, `"late"`}, // members after the deep part count
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{"x":` + deep + `}}`, frame.Notification, ""},
		{`{"jsonrpc":"2.0","id":7,"method":"roots/list","params":` + strings.Repeat(`{"a":`, 600) + `1` + strings.Repeat(`}`, 600) + `}`, frame.Request, "7"},
		{deep, frame.Invalid, ""},
		{`{"x":` + deep + `,"id":3}`, frame.Invalid, ""},
	}
	for _, tt := range tests {
		is := is.New(t)
		_, err := frame.Parse([]byte(tt.in))
		var env *frame.EnvelopeError
		is.True(errors.As(err, &env))
		is.True(errors.Is(err, frame.ErrTooDeep))
		is.Equal(env.Shape, tt.shape)
		is.Equal(env.ID, tt.id)
	}
}

func TestTooDeepButBrokenIsASyntaxError(t *testing.T) {
	is := is.New(t)
	for _, in := range []string{
		`{"id":1,"x":` + strings.Repeat("[", 600) + `}`,                                       // never closed
		`{"id":1,"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `,}`,           // broken after it
		`{"id":1,"x":` + strings.Repeat("[", 600) + `"\x01"` + strings.Repeat("]", 600) + `}`, // a control character in a string
	} {
		_, err := frame.Parse([]byte(in))
		is.Equal(err, frame.ErrSyntax)
	}
}

func TestReaderRefusesDeepLines(t *testing.T) {
	is := is.New(t)
	in := string(nested(1000, "41")) + "\n" + `{"jsonrpc":"2.0","id":42,"method":"ping"}` + "\n"
	r := frame.NewReader(strings.NewReader(in), 0)
	_, err := r.Read()
	var le *frame.LineError
	is.True(errors.As(err, &le))
	is.True(errors.Is(err, frame.ErrTooDeep))
	is.Equal(le.ID, frame.ID("41")) // the request is answered
	is.Equal(le.Code(), frame.CodeInvalidRequest)
	m, err := r.Read() // and the next line is read as usual
	is.NoErr(err)
	is.Equal(m.ID(), frame.ID("42"))

	r = frame.NewReader(strings.NewReader(in), 0)
	r.SetMaxDepth(2000)
	m, err = r.Read()
	is.NoErr(err)
	is.Equal(m.ID(), frame.ID("41"))
}

func TestValid(t *testing.T) {
	is := is.New(t)
	for _, in := range []string{
		`1`, `-0.5e+3`, `"a\u00e9\n"`, `true`, `null`, `[]`, `{}`, ` {"a" : [1, {"b":null}] } `,
		`{"a":1,"a":2}`, // Valid judges JSON, not the envelope
		"\"\xff\"",      // invalid UTF-8 is for Parse to mend
		strings.Repeat("[", 512) + strings.Repeat("]", 512),
	} {
		is.True(frame.Valid([]byte(in))) // valid
		is.True(json.Valid([]byte(in)))
	}
	for _, in := range []string{
		``, ` `, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"`, `"\x"`, `"\u12g4"`, "\"\t\"",
		`[1,]`, `{"a":1,}`, `{"a"}`, `{1:2}`, `[1 2]`, `{} {}`, `[`, `]`, `{"a":1]`, `[}`,
		strings.Repeat("[", 513) + strings.Repeat("]", 513),
	} {
		is.True(!frame.Valid([]byte(in))) // invalid
	}
}

// FuzzValid checks the scanner against encoding/json: the same inputs are
// valid JSON, up to the depth limit.
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[1,2.5e-3,"x\u0041",true,false,null,{}]`,
		`{"a":{"b":[{"c":"\\\"/\b\f\n\r\t"}]}}`, "\"\xff\xfe\"", `-0`, `1E+2`, `[01]`, `{"a":1,}`,
		strings.Repeat("[", 512) + strings.Repeat("]", 512),
		strings.Repeat(`{"a":`, 513) + `1` + strings.Repeat("}", 513),
		strings.Repeat("[", 600) + `"]"` + strings.Repeat("]", 600),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, want := frame.Valid(in), json.Valid(in)
		if got && !want {
			t.Fatalf("Valid(%q) = true, encoding/json says invalid", in)
		}
		if !got && want && nesting(in) <= frame.DefaultMaxDepth {
			t.Fatalf("Valid(%q) = false, encoding/json says valid", in)
		}
	})
}

// nesting returns how deeply valid JSON b nests.
func nesting(b []byte) int {
	d, most := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			d++
			most = max(most, d)
		case ']', '}':
			d--
		}
	}
	return most
}

func BenchmarkParseLargeResult(b *testing.B) {
	// A tools/list result of 200 tools with schemas: many members, most
	// of them deeper than the levels whose names are checked.
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":3,"result":{"tools":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"name":"tool` + strings.Repeat("x", i%7) + `","description":"does a thing with its input, at some length to look like a real one","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":0},"flags":{"type":"array","items":{"type":"string"}}},"required":["path"]}}`)
	}
	sb.WriteString(`],"nextCursor":"abc"}}`)
	in := []byte(sb.String())
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := frame.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

// A batch is held to its parser's limit once; its elements are not held
// to the default limit again.
func TestBatchElementsKeepTheBatchsLimit(t *testing.T) {
	is := is.New(t)
	el := nested(1000, "1")
	batch, err := frame.Parser{MaxDepth: 2000}.Parse([]byte("[" + string(el) + "]"))
	is.NoErr(err)
	is.Equal(batch.Kind(), frame.Batch)
	for e := range batch.Elements() {
		is.Equal(e.Kind(), frame.Request)
		is.Equal(e.ID(), frame.ID("1"))
	}
	_, err = frame.Parse([]byte("[" + string(el) + "]"))
	is.True(errors.Is(err, frame.ErrTooDeep))
}
