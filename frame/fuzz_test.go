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
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\xe2\x82\"}}\n",
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
			if len(b) > 3*max || !gjson.ValidBytes(b) { // an invalid byte grows to three
				t.Fatalf("bad message %q", b)
			}
			checkOneLine(t, b)
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

// FuzzParse checks that Parse and Set keep their promises on any input:
// every message is one line of JSON that encoding/json accepts, in valid
// UTF-8, and replacing invalid UTF-8 changes nothing but the invalid bytes.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), []byte(`"c"`))
	f.Add([]byte("{\n\"id\":\"x\",\"result\":[1.50]}"), []byte(`{"a":[1]}`))
	f.Add([]byte(`[{"id":1}]`), []byte(`1`))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"a\xffb\xed\xa0\x80\"}}"), []byte("\"\xc0\xaf\""))
	f.Add([]byte("{\"k\xfe\":\"\\ud800\xf4\x90\x80\x80\"}"), []byte("{\"\xe2\x82\":1}"))
	f.Fuzz(func(t *testing.T, in, val []byte) {
		m, err := frame.Parse(in)
		if err != nil {
			return
		}
		checkAccepted(t, in, m.Bytes())
		owned, err := frame.ParseOwned(bytes.Clone(in))
		if err != nil || !bytes.Equal(owned.Bytes(), m.Bytes()) {
			t.Fatalf("ParseOwned(%q) = %q, %v; Parse gave %q", in, owned.Bytes(), err, m.Bytes())
		}
		n, err := m.Set("params.cursor", val)
		if err != nil {
			return
		}
		if !gjson.ValidBytes(n.Bytes()) {
			t.Fatalf("Set produced %q", n.Bytes())
		}
		checkOneLine(t, n.Bytes())
	})
}
