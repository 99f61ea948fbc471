package transport

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestAccepts(t *testing.T) {
	for _, tt := range []struct {
		accept         string
		sse, json, get bool
	}{
		{"application/json, text/event-stream", true, true, true},
		{"text/event-stream, application/json", true, true, true},
		{"application/json", false, true, false},
		{"text/event-stream", true, false, true},
		{"*/*", false, true, true},
		{"application/*", false, true, false},
		{"text/*", false, false, true},
		{"TEXT/Event-Stream;q=0.5", true, false, true},
		{"text/event-stream;q=0, application/json", false, true, false},
		{"application/json;q=0", false, false, false},
		{"text/html", false, false, false},
		{"", false, false, false},
	} {
		t.Run(tt.accept, func(t *testing.T) {
			is := is.New(t)
			sse, json := acceptsPOST([]string{tt.accept})
			is.Equal(sse, tt.sse)
			is.Equal(json, tt.json)
			is.Equal(acceptsGET([]string{tt.accept}), tt.get)
		})
	}
	is := is.New(t)
	sse, json := acceptsPOST(nil) // no Accept at all: JSON
	is.True(!sse && json)
	is.True(acceptsGET(nil))
}

// FuzzAccept feeds arbitrary Accept values to the parsers: nothing may
// panic, and a type refused with q=0 is never taken.
func FuzzAccept(f *testing.F) {
	for _, s := range []string{"application/json, text/event-stream", "*/*;q=0", "text/event-stream;q=0.0;level=1", ";;,,", "a/b/c", "text/event-stream;q=NaN", "application/json;q=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sse, _ := acceptsPOST([]string{s})
		acceptsGET([]string{s})
		if sse && !strings.Contains(strings.ToLower(s), "event-stream") {
			t.Fatalf("SSE accepted from %q", s)
		}
	})
}

// FuzzUnbatch feeds arbitrary POST bodies to the parsing the server does
// before routing: nothing may panic, and whatever passes is a list of
// JSON-RPC messages.
func FuzzUnbatch(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`[]`, `[1]`, `[[]]`, `42`, `{"id":1}`, `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, "[\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := frame.Parse(b)
		if err != nil {
			return
		}
		msgs, err := unbatch(m)
		if err != nil {
			return
		}
		if len(msgs) == 0 {
			t.Fatal("no messages and no error")
		}
		for _, e := range msgs {
			switch e.Kind() {
			case frame.Invalid, frame.Batch:
				t.Fatalf("passed %v in %q", e.Kind(), b)
			}
			if m.Kind() == frame.Batch && e.Method() == "initialize" {
				t.Fatalf("passed a batched initialize in %q", b)
			}
		}
	})
}
