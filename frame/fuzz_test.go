package frame_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// FuzzReader feeds arbitrary stdin bytes to the NDJSON reader. Whatever
// arrives, every message it yields must be one line of valid JSON that
// parses back to itself, and every failure must be a LineError or the end.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
		"{\"id\":1,\"result\":{}}\r\n\n\n{\"method\":\"x\"}",
		"not json\n[1,2]\n\"s\"\n",
		"{\n\"id\":1}\n",
		"{\"id\":\"big\",\"params\":\"" + string(bytes.Repeat([]byte("a"), 300)) + "\"}\n",
		"\xff\xfe{}\n\x00\n",
		"{\"a\":\"\\u2028\"}\r\r\n",
	} {
		f.Add([]byte(s), 128)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 16 || max > 1<<20 {
			max = 1 << 20
		}
		r := frame.NewReader(bytes.NewReader(in), max)
		for range len(in) + 2 {
			m, err := r.Read()
			if err != nil {
				var le *frame.LineError
				if errors.As(err, &le) {
					if le.Code() != frame.CodeParseError && le.Code() != frame.CodeInvalidRequest {
						t.Fatalf("bad code %d", le.Code())
					}
					if le.ID != "" && !gjson.Valid(string(le.ID)) {
						t.Fatalf("recovered id %q is not a JSON token", le.ID)
					}
					continue
				}
				return
			}
			b := m.Bytes()
			if len(b) > max || bytes.ContainsAny(b, "\r\n") || !gjson.ValidBytes(b) {
				t.Fatalf("bad message %q", b)
			}
			again, err := frame.Parse(b)
			if err != nil || !bytes.Equal(again.Bytes(), b) || again.Kind() != m.Kind() || again.ID() != m.ID() {
				t.Fatalf("not stable: %q", b)
			}
		}
		t.Fatal("reader did not terminate")
	})
}

// FuzzSSEReader feeds arbitrary bytes to the SSE reader: it must terminate,
// never panic, and never return more data than the cap.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"event: endpoint\ndata: /m?x=1\n\n",
		"data: a\r\ndata: b\r\n\r\n",
		"\xEF\xBB\xBFdata:x\r\r",
		": ping\n\nid: 1\nretry: 10\ndata\n\n",
		"data: " + string(bytes.Repeat([]byte("z"), 200)) + "\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 100
		r := frame.NewSSEReader(bytes.NewReader(in), max)
		for range len(in) + 2 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > max || len(ev.Data) == 0 || ev.Type == "" {
				t.Fatalf("bad event %+v", ev)
			}
		}
		t.Fatal("reader did not terminate")
	})
}

// FuzzParse checks that Parse and Set keep their promises on any input.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), []byte(`"c"`))
	f.Add([]byte("{\n\"id\":\"x\",\"result\":[1.50]}"), []byte(`{"a":[1]}`))
	f.Add([]byte(`[{"id":1}]`), []byte(`1`))
	f.Fuzz(func(t *testing.T, in, val []byte) {
		m, err := frame.Parse(in)
		if err != nil {
			return
		}
		if bytes.ContainsAny(m.Bytes(), "\r\n") {
			t.Fatalf("multi-line message %q", m.Bytes())
		}
		n, err := m.Set("params.cursor", val)
		if err != nil {
			return
		}
		if !gjson.ValidBytes(n.Bytes()) || bytes.ContainsAny(n.Bytes(), "\r\n") {
			t.Fatalf("Set produced %q", n.Bytes())
		}
	})
}
