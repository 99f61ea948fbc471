package mw

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// FuzzStripModernMeta: whatever _meta a request carries, the edit in place
// leaves valid JSON with no reserved key in params._meta, and every other
// key of _meta with its value, in order.
func FuzzStripModernMeta(f *testing.F) {
	for _, meta := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"t"}`,
		`{ "io.modelcontextprotocol\/x" : {} , "a" : [1,2] , "io.modelcontextprotocol/y":null }`,
		`{"a":{"b":{"c":1,"c":2}},"io.modelcontextprotocol/z":"\u00e9"}`,
		`{}`,
		`[1]`,
		`"s"`,
	} {
		f.Add([]byte(meta))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		m, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1,"_meta":`), meta...), "}}"...))
		if err != nil || m.Kind() != frame.Request || !m.Get("params._meta").IsObject() {
			return
		}
		out := withoutModernMeta(m)
		if !gjson.ValidBytes(out.Bytes()) || out.Kind() != frame.Request || out.Get("params.x").Raw != "1" {
			t.Fatalf("%s became %s", m, out)
		}
		var want, got []string
		reserved := false
		m.Get("params._meta").ForEach(func(k, v gjson.Result) bool {
			if strings.HasPrefix(k.Str, reservedMetaPrefix) {
				reserved = true
			} else {
				want = append(want, k.Raw+":"+v.Raw)
			}
			return true
		})
		out.Get("params._meta").ForEach(func(k, v gjson.Result) bool {
			got = append(got, k.Raw+":"+v.Raw)
			return true
		})
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s became %s: kept %v, want %v", m, out, got, want)
		}
		if reserved && len(want) == 0 && out.Get("params._meta").Exists() {
			t.Fatalf("%s became %s: an empty _meta stayed", m, out)
		}
		if !reserved && &out.Bytes()[0] != &m.Bytes()[0] {
			t.Fatalf("%s was copied, with nothing to strip", m)
		}
	})
}

// FuzzCleanModernMeta: whatever _meta a 2026-07-28 server puts on a
// result, an error's data or a notification, taking its 2026-07-28 keys
// off for a session-era host leaves valid JSON of the same kind with
// every other key of _meta, value and order kept, and no empty _meta
// where one was emptied.
func FuzzCleanModernMeta(f *testing.F) {
	for _, meta := range []string{
		`{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}`,
		`{"io.modelcontextprotocol/serverInfo":{},"k":1.50,"io.modelcontextprotocol/related-task":{"taskId":"t"}}`,
		`{ "a" : 1 , "io.modelcontextprotocol/subscriptionId" : "L" }`,
		`{"io.modelcontextprotocol\/serverInfo":1,"io.modelcontextprotocol/serverInfo":2}`,
		`{}`,
		`7`,
	} {
		for kind := range byte(3) {
			f.Add([]byte(meta), kind)
		}
	}
	f.Fuzz(func(t *testing.T, meta []byte, kind byte) {
		var raw []byte
		var path string
		switch kind % 3 {
		case 0:
			raw, path = append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":1,"_meta":`), meta...), "}}"...), "result._meta"
		case 1:
			raw, path = append(append([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":{"x":1,"_meta":`), meta...), "}}}"...), "error.data._meta"
		default:
			raw, path = append(append([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"x":1,"_meta":`), meta...), "}}"...), "params._meta"
		}
		m, err := frame.Parse(raw)
		if err != nil || m.Kind() == frame.Invalid || !m.Get(path).IsObject() {
			return // an invalid message (repeated member names, say) never gets here
		}
		out := withoutMetaKeys(m, path, mcp.IsModernMetaKey)
		if !gjson.ValidBytes(out.Bytes()) || out.Kind() != m.Kind() {
			t.Fatalf("%s became %s", m, out)
		}
		var want, got []string
		dropped := false
		m.Get(path).ForEach(func(k, v gjson.Result) bool {
			if mcp.IsModernMetaKey(k.Str) {
				dropped = true
			} else {
				want = append(want, k.Raw+":"+v.Raw)
			}
			return true
		})
		out.Get(path).ForEach(func(k, v gjson.Result) bool {
			got = append(got, k.Raw+":"+v.Raw)
			return true
		})
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s became %s: kept %v, want %v", m, out, got, want)
		}
		if dropped && len(want) == 0 && out.Get(path).Exists() {
			t.Fatalf("%s became %s: an empty _meta stayed", m, out)
		}
	})
}

// FuzzStampResult: whatever result a server sends, stamping leaves valid
// JSON whose result has a resultType and keeps every member it had.
func FuzzStampResult(f *testing.F) {
	for _, res := range []string{
		`{}`,
		`{"tools":[]}`,
		`{ "_meta" : { } , "n" : 1.50 }`,
		`{"_meta":{"k":1},"resultType":"input_required"}`,
		`{"_meta":7,"ttlMs":-1}`,
		`{"_meta":{"k":1,"k":2},"resultType":"complete","resultType":"input_required"}`,
		`{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(res), "tools/list")
	}
	f.Fuzz(func(t *testing.T, res []byte, method string) {
		m, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), res...), '}'))
		if err != nil || m.Kind() != frame.Result {
			return
		}
		out, err := stampResult(m, method, `{"name":"s","version":"1"}`, []byte("0"))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if !gjson.ValidBytes(out.Bytes()) || out.Kind() != frame.Result {
			t.Fatalf("%s became %s", m, out)
		}
		if !m.Get("result").IsObject() {
			if out.String() != m.String() {
				t.Fatalf("%s became %s", m, out)
			}
			return
		}
		if !out.Get("result.resultType").Exists() {
			t.Fatalf("%s became %s: no resultType", m, out)
		}
		m.Get("result").ForEach(func(k, v gjson.Result) bool {
			if !strings.Contains(out.Get("result").Raw, k.Raw) {
				t.Fatalf("%s became %s: %s lost", m, out, k.Raw)
			}
			return true
		})
	})
}
