package mw

import (
	"strings"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// FuzzCheckBatch feeds arbitrary POST bodies to the batch rules of the
// session stage: nothing may panic, and a batch that passes holds only
// JSON-RPC messages and no initialize.
func FuzzCheckBatch(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`[]`, `[1]`, `[[]]`, `42`, `{"id":1}`, `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, "[\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n]",
		`[{"jsonrpc":"2.0","id":1,"method":"ping","id":2},{"jsonrpc":"2.0","method":"x","params":{"a":1,"a":2}}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := frame.Parse(b)
		if err != nil || checkBatch(m) != nil || m.Kind() != frame.Batch {
			return
		}
		n := 0
		for e := range m.Elements() {
			n++
			switch e.Kind() {
			case frame.Invalid, frame.Batch:
				t.Fatalf("passed %v in %q", e.Kind(), b)
			}
			if e.Method() == "initialize" {
				t.Fatalf("passed a batched initialize in %q", b)
			}
		}
		if n == 0 {
			t.Fatalf("passed an empty batch %q", b)
		}
	})
}
