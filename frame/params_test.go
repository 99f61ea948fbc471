package frame_test

import (
	"fmt"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// A stage reads a request's params, and what is under them, without a
// walk over the members before them.
func ExampleMessage_Params() {
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	fmt.Println(m.Params().Get("name"))
	fmt.Println(m.Get(`params._meta.io\.modelcontextprotocol/protocolVersion`))
	// Output:
	// echo
	// 2026-07-28
}

func ExampleMessage_Contains() {
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio\/serve\/x\/1"}}}`)
	fmt.Println(m.Contains(`"mcp-stdio\/serve\/x\/1"`))
	fmt.Println(m.Contains(`"mcp-stdio/serve/x/1"`)) // as it stands, not as it reads
	// Output:
	// true
	// false
}

// TestParamsFollowTheID: reads under params give gjson's value and index
// after the id is replaced by a longer or a shorter one, whether params
// come after the id or before it, after Set, and when params is not an
// object (then the whole message is read).
func TestParamsFollowTheID(t *testing.T) {
	is := is.New(t)
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"b":"x"}}}`,
		`{"jsonrpc":"2.0","params":{"a":{"b":"x"}},"method":"m","id":"client-1"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"b":"x"}},"params":{"a":{"b":"y"}}}`, // Invalid: read the first
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[{"b":"x"}]}`,                              // Invalid: not an object
	} {
		m := frame.MustParse(raw)
		same := func(m frame.Message, path string) {
			t.Helper()
			want := gjson.GetBytes(m.Bytes(), path)
			got := m.Get(path)
			is.Equal(got.Raw, want.Raw)     // value
			is.Equal(got.Index, want.Index) // where it is in the bytes
		}
		same(m, "params.a.b")
		same(m, "params.0.b")
		for _, id := range []frame.ID{`"mcp-stdio-router-1234567"`, "7"} {
			n, err := m.WithID(id)
			if m.Kind() == frame.Invalid {
				continue
			}
			is.NoErr(err)
			is.Equal(n.ID(), id)
			same(n, "params.a.b")
			is.Equal(n.Get("params.a.b").Str, "x")
			is.Equal(n.Params().Index, gjson.GetBytes(n.Bytes(), "params").Index)
			n, err = n.Set("params.a.c", []byte("true"))
			is.NoErr(err)
			same(n, "params.a.b")
			same(n, "params.a.c")
		}
	}
}

// Reads under params._meta find what gjson finds in the whole message, in
// every place _meta can be, before and after the id changes length.
func TestMetaFollowsTheID(t *testing.T) {
	is := is.New(t)
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"x","_meta":{"progressToken":7,"a":{"b":"x"}}}}`,
		`{"jsonrpc":"2.0","params":{"_meta":{"progressToken":7,"a":{"b":"x"}},"name":"x"},"method":"m","id":"client-1"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_m\u0065ta":{"progressToken":7,"a":{"b":"x"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":{}},"_meta":{"progressToken":7,"a":{"b":"x"}}}}`,      // Invalid: gjson reads on
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":7,"a":{"b":"x"}}},"params":{"_meta":{}}}`, // Invalid
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":[{"progressToken":7}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progress\u0054oken":7,"a":{"b":"x"}}}}`, // the name escaped
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":{"b":"x"}},"progressToken":7}}`,      // the name elsewhere
	} {
		m := frame.MustParse(raw)
		same := func(m frame.Message) {
			t.Helper()
			for _, path := range []string{"params._meta", "params._meta.progressToken", "params._meta.a.b", "params._meta.0.progressToken", "params._meta.missing"} {
				want := gjson.GetBytes(m.Bytes(), path)
				got := m.Get(path)
				is.Equal(got.Raw, want.Raw)     // value
				is.Equal(got.Index, want.Index) // where it is in the bytes
			}
		}
		same(m)
		if m.Kind() == frame.Invalid {
			continue
		}
		for _, id := range []frame.ID{`"mcp-stdio/serve/AbCdEfGhIjKlMnOp/123456"`, "7"} {
			n, err := m.WithID(id)
			is.NoErr(err)
			same(n)
			n, err = n.Set("params.z", []byte("true"))
			is.NoErr(err)
			same(n)
		}
	}
}
