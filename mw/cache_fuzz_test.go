package mw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// FuzzCacheKey: the key of any request's params never panics, and a
// request whose params are spelled otherwise (encoding/json's re-encoding:
// keys sorted, no spaces, strings escaped its way) has the same key.
func FuzzCacheKey(f *testing.F) {
	for _, p := range []string{
		`{}`,
		`{"cursor":"c2"}`,
		`{"uri":"file:\/\/\/a","_meta":{"progressToken":1}}`,
		`{ "b" : {"x":"\u00e9","y":[1,2.50,-0e3,true,null]}, "a":"<&>" }`,
		`{"a":{"k":1,"k":2}}`,
		`{"inputResponses":{},"requestState":"s"}`,
		`{"cursor":"a","cursor":"b"}`,
		`{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
		`[1]`,
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		m, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`), params...), '}'))
		if err != nil {
			return
		}
		key, ok := cacheKey(m)
		if !ok || !m.Get("params").IsObject() {
			return
		}
		d := json.NewDecoder(bytes.NewReader([]byte(m.Get("params").Raw)))
		d.UseNumber()
		var v map[string]any
		if d.Decode(&v) != nil {
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			return
		}
		m2, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":`), again...), '}'))
		if err != nil {
			t.Fatalf("re-encoded params do not parse: %s", again)
		}
		key2, ok := cacheKey(m2)
		if !ok || key2 != key {
			t.Fatalf("%s and %s have different keys: %q, %q", m.Get("params").Raw, again, key, key2)
		}
	})
}
