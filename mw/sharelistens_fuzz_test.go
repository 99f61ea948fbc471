package mw

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// FuzzShareListensFilter: whatever filter a client sends, it is read
// without a failure, asks for the same whatever the order of its members,
// its JSON asks for the same again, and a listen with the filter either
// gets -32602 (not an object) or goes to the child as one listen under a
// minted id, the filter's bytes untouched.
func FuzzShareListensFilter(f *testing.F) {
	for _, p := range []string{
		`{}`,
		`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`,
		`{"resourceSubscriptions":["a","a",1,null,"","\u00e9"],"toolsListChanged":false}`,
		`{"toolsListChanged":true,"toolsListChanged":false}`,
		`{"a\"b":true,"a\\\"b":1}`,
		`[]`,
		`"x"`,
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, filter []byte) {
		m, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":`), filter...), "}}"...))
		if err != nil || m.Kind() != frame.Request { // a name given twice in notifications is refused before any stage
			return
		}
		req := m.Get("params.notifications")
		f1 := parseFilter(req)
		if req.IsObject() {
			if again := parseFilter(gjson.Parse(f1.json())); !again.equal(f1) {
				t.Fatalf("%s reads as %s", req.Raw, f1.json())
			}
			// The members reversed: the same key.
			var members []string
			req.ForEach(func(k, v gjson.Result) bool {
				members = append([]string{k.Raw + ":" + v.Raw}, members...)
				return true
			})
			rev := `{`
			for i, mb := range members {
				if i > 0 {
					rev += ","
				}
				rev += mb
			}
			rev += `}`
			if r, err := frame.Parse([]byte(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":` + rev + `}}`)); err == nil && !parseFilter(r.Get("params.notifications")).equal(f1) {
				t.Fatalf("%s and %s ask for different things", req.Raw, rev)
			}
		}
		r := newShareRig(t, 0)
		if err := r.d.ToServer.Handle(r.ctx, m); err != nil {
			t.Fatal(err)
		}
		if !req.IsObject() {
			if code, _ := r.client.next(t).ErrorCode(); code != frame.CodeInvalidParams {
				t.Fatalf("code %d for %s", code, req.Raw)
			}
			return
		}
		up := r.child.next(t)
		if up.ID() != upID0 || up.Get("params.notifications").Raw != req.Raw {
			t.Fatalf("the child got %s", up)
		}
	})
}
