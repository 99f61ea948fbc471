package mw

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
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
