package mw

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestMatchToolGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything/at.all", true},
		{"", "", true},
		{"", "a", false},
		{"echo", "echo", true},
		{"echo", "Echo", false},
		{"echo", "echo2", false},
		{"github_*", "github_create_issue", true},
		{"github_*", "github_", true},
		{"github_*", "gitlab_x", false},
		{"*_issue", "github_create_issue", true},
		{"*issue*", "list_issues_x", true},
		{"files/?", "files/a", true},
		{"files/?", "files/é", true},
		{"files/?", "files/ab", false},
		{"files/?", "files/", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"[ab]", "a", false},
		{"[ab]", "[ab]", true},
		{`a\*`, `a\xyz`, true},
		{"**", "x", true},
		{"a*a*a*a*a*b", strings.Repeat("a", 200), false},
	} {
		if got := MatchToolGlob(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchToolGlob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// filterRig is a ToolFilter stage between a recording server and a
// recording client.
type filterRig struct {
	d Duplex

	mu       sync.Mutex
	toServer []string
	toClient []string
	answer   func(m frame.Message) *frame.Message // the server's answer, delivered within Handle
	err      error                                // what the server's Handle returns
}

func newFilterRig(t *testing.T, o ToolFilterOptions) *filterRig {
	t.Helper()
	stage, err := ToolFilter(o)
	if err != nil {
		t.Fatal(err)
	}
	r := &filterRig{}
	var client Late
	r.d = stage(Duplex{
		ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
			r.mu.Lock()
			r.toServer = append(r.toServer, m.String())
			answer, err := r.answer, r.err
			r.mu.Unlock()
			if answer != nil {
				if a := answer(m); a != nil {
					if err := r.d.ToClient.Handle(ctx, *a); err != nil {
						return err
					}
				}
			}
			return err
		}),
		ToClient: &client,
	})
	client.Bind(HandlerFunc(func(_ context.Context, m frame.Message) error {
		r.mu.Lock()
		r.toClient = append(r.toClient, m.String())
		r.mu.Unlock()
		return nil
	}))
	return r
}

func TestToolFilter(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"echo","inputSchema":{}} , {"name":"rm_all"},{"name":"github_issue"}, {"name":"add"} ],"nextCursor":"c2","ttlMs":5}}`
	for _, tt := range []struct {
		name        string
		allow, deny []string
		in          string // the client's request
		result      string // the server's answer ("" for none)
		forwarded   bool
		want        string // what the client gets
	}{
		{"deny one", nil, []string{"rm_*"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, list, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"echo","inputSchema":{}} , {"name":"github_issue"}, {"name":"add"} ],"nextCursor":"c2","ttlMs":5}}`},
		{"deny the last", nil, []string{"add"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, list, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"echo","inputSchema":{}} , {"name":"rm_all"},{"name":"github_issue"} ],"nextCursor":"c2","ttlMs":5}}`},
		{"deny the first", nil, []string{"echo"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, list, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"rm_all"},{"name":"github_issue"}, {"name":"add"} ],"nextCursor":"c2","ttlMs":5}}`},
		{"allow one", []string{"github_*"}, nil, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, list, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"github_issue"} ],"nextCursor":"c2","ttlMs":5}}`},
		{"deny wins over allow", []string{"*"}, []string{"*"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, list, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[  ],"nextCursor":"c2","ttlMs":5}}`},
		{"nothing filtered", nil, []string{"nope"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, list, true, list},
		{"a page with a cursor", nil, []string{"rm_all", "github_issue"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"c1"}}`, list, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[ {"name":"echo","inputSchema":{}} , {"name":"add"} ],"nextCursor":"c2","ttlMs":5}}`},
		{"hostile elements stay", nil, []string{"*"}, `{"jsonrpc":"2.0","id":"s","method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":"s","result":{"tools":[1,"x",{"name":2},{"nom":"a"},null,{"name":"\u0061"}]}}`, true,
			`{"jsonrpc":"2.0","id":"s","result":{"tools":[1,"x",{"name":2},{"nom":"a"},null]}}`},
		{"tools not an array", nil, []string{"*"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":{"name":"echo"}}}`, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":{"name":"echo"}}}`},
		{"an error passes", nil, []string{"*"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`, true,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`},
		{"another method's result", nil, []string{"*"}, `{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"echo"}]}}`, true,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"echo"}]}}`},
		{"call denied", nil, []string{"rm_*"}, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm_all","arguments":{}}}`, "", false,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool: \"rm_all\" is filtered out by the gateway (--deny-tool \"rm_*\")","data":{"tool":"rm_all","filter":"--deny-tool \"rm_*\""}}}`},
		{"call not allowed", []string{"echo"}, nil, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"r\u006d"}}`, "", false,
			`{"jsonrpc":"2.0","id":"c","error":{"code":-32602,"message":"Unknown tool: \"rm\" is filtered out by the gateway (no --allow-tool matches it)","data":{"tool":"rm","filter":"no --allow-tool matches it"}}}`},
		{"call allowed", []string{"echo"}, nil, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`, true, `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`},
		{"call without a string name", []string{"echo"}, nil, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":1}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`, true, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`},
		{"list_changed passes", nil, []string{"*"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, true, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := newFilterRig(t, ToolFilterOptions{Allow: tt.allow, Deny: tt.deny})
			if tt.result != "" {
				res := frame.MustParse(tt.result)
				r.answer = func(frame.Message) *frame.Message { return &res }
			}
			is.NoErr(r.d.ToServer.Handle(context.Background(), frame.MustParse(tt.in)))
			is.Equal(len(r.toServer) == 1, tt.forwarded)
			if tt.forwarded {
				is.Equal(r.toServer[0], frame.MustParse(tt.in).String()) // forwarded as it came
			}
			is.Equal(r.toClient, []string{frame.MustParse(tt.want).String()})
		})
	}
}

func TestToolFilterOff(t *testing.T) {
	is := is.New(t)
	stage, err := ToolFilter(ToolFilterOptions{})
	is.NoErr(err)
	is.True(stage == nil) // no stage at all
	_, err = ToolFilter(ToolFilterOptions{Deny: []string{"a", ""}})
	is.True(err != nil)
}

// An answer that comes after Handle returned (on another stream) is still
// filtered; one whose request failed is not the server's and is let be.
func TestToolFilterAnswerElsewhere(t *testing.T) {
	is := is.New(t)
	r := newFilterRig(t, ToolFilterOptions{Deny: []string{"b"}})
	r.err = frame.ErrAnswerElsewhere
	err := r.d.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	is.True(errors.Is(err, frame.ErrAnswerElsewhere))
	is.NoErr(r.d.ToClient.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`)))
	is.Equal(r.toClient, []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`})

	// A second answer to the same id is no longer a tools/list's.
	is.NoErr(r.d.ToClient.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}]}}`)))
	is.Equal(r.toClient[1], `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}]}}`)

	r.err = errors.New("boom")
	is.True(r.d.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)) != nil)
	is.NoErr(r.d.ToClient.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b"}]}}`)))
	is.Equal(r.toClient[2], `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b"}]}}`) // forgotten: no longer awaited
}

// At most MaxLists tools/list wait for their answers; one more is
// answered at once with -32603, never forwarded.
func TestToolFilterMaxLists(t *testing.T) {
	is := is.New(t)
	r := newFilterRig(t, ToolFilterOptions{Deny: []string{"b"}, MaxLists: 2})
	r.err = frame.ErrAnswerElsewhere
	for _, id := range []string{"1", "2", "3"} {
		_ = r.d.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`))
	}
	is.Equal(len(r.toServer), 2)
	is.Equal(len(r.toClient), 1)
	is.True(strings.Contains(r.toClient[0], `"id":3,"error":{"code":-32603`))
	// An answer frees a place.
	is.NoErr(r.d.ToClient.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`)))
	_ = r.d.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))
	is.Equal(len(r.toServer), 3)
}

// FuzzToolFilterList: any tools/list result the server sends reaches the
// client as valid JSON, without any element naming a denied tool, with
// every other element and every byte outside result.tools as they came.
func FuzzToolFilterList(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a"},{"name":"rm"}]}`,
		`{"tools":[ {"name":"rm"} , {"name":"rm_x"} ]}`,
		`{"tools":[{"name":"rm","name2":{"x":[1,2]}},"rm",{"name":"r\u006d"},{"name":"\ud800"}],"nextCursor":"c"}`,
		`{"tools":[]}`,
		`{"tools":{"name":"rm"}}`,
		`{"tools":[` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `,{"name":"rm"}]}`,
		`{"tools":[{"name":"rm"}],"tools":[{"name":"rm"}]}`,
		`[{"name":"rm"}]`,
		`"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		res, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), result...), '}'))
		if err != nil || res.Kind() != frame.Result {
			return
		}
		r := newFilterRig(t, ToolFilterOptions{Deny: []string{"rm*"}, Allow: []string{"*"}})
		r.answer = func(frame.Message) *frame.Message { return &res }
		if err := r.d.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); err != nil {
			t.Fatal(err)
		}
		if len(r.toClient) != 1 {
			t.Fatalf("%d answers", len(r.toClient))
		}
		got, err := frame.Parse([]byte(r.toClient[0]))
		if err != nil {
			t.Fatalf("invalid answer %q: %v", r.toClient[0], err)
		}
		in, out := res.Get("result.tools"), got.Get("result.tools")
		if !in.IsArray() {
			if got.String() != res.String() {
				t.Fatalf("changed without a tools array: %s", got)
			}
			return
		}
		var kept []string
		for _, e := range in.Array() {
			if n := e.Get("name"); e.IsObject() && n.Type == 3 && strings.HasPrefix(n.String(), "rm") {
				continue
			}
			kept = append(kept, e.Raw)
		}
		var gotElems []string
		for _, e := range out.Array() {
			gotElems = append(gotElems, e.Raw)
		}
		if strings.Join(gotElems, "\x00") != strings.Join(kept, "\x00") {
			t.Fatalf("elements %q, want %q", gotElems, kept)
		}
		// Outside the array, every byte as it came.
		rs, gs := res.String(), got.String()
		if rs[:in.Index] != gs[:out.Index] || rs[in.Index+len(in.Raw):] != gs[out.Index+len(out.Raw):] {
			t.Fatalf("bytes outside result.tools changed:\n%s\n%s", rs, gs)
		}
	})
}

// A client's batch holding a tools/list, or a call of a filtered-out tool,
// is answered with one -32600 per request and never forwarded; another
// batch passes.
func TestToolFilterBatch(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"a list", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
			`[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"the gateway filters tools: send tools/list and tools/call on their own, not in a batch"}},{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"the gateway filters tools: send tools/list and tools/call on their own, not in a batch"}}]`},
		{"a denied call", `[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"rm"}}]`,
			`[{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"the gateway filters tools: send tools/list and tools/call on their own, not in a batch"}}]`},
		{"an allowed call", `[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := newFilterRig(t, ToolFilterOptions{Deny: []string{"rm"}})
			is.NoErr(r.d.ToServer.Handle(context.Background(), frame.MustParse(tt.in)))
			if tt.want == "" {
				is.Equal(r.toServer, []string{tt.in})
				is.Equal(len(r.toClient), 0)
				return
			}
			is.Equal(len(r.toServer), 0) // never forwarded
			is.Equal(r.toClient, []string{tt.want})
		})
	}
}

// FuzzToolFilterRequest: any message a client sends is either forwarded
// byte for byte or answered (never both, never a panic), and a tools/call
// of a denied tool, alone or in a batch, is never forwarded.
func FuzzToolFilterRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r\u006d"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["rm"]}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}},{"jsonrpc":"2.0","method":"x"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},[1],5]`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"rm"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := frame.Parse(b)
		if err != nil {
			return
		}
		r := newFilterRig(t, ToolFilterOptions{Deny: []string{"rm"}})
		_ = r.d.ToServer.Handle(context.Background(), m)
		if len(r.toServer)+len(r.toClient) != 1 {
			t.Fatalf("forwarded %d, answered %d", len(r.toServer), len(r.toClient))
		}
		if len(r.toServer) == 1 {
			if r.toServer[0] != m.String() {
				t.Fatalf("forwarded %s, not %s", r.toServer[0], m)
			}
			for e := range m.Elements() {
				if e.Kind() == frame.Request && e.Method() == "tools/call" && e.Get("params.name").String() == "rm" && e.Get("params.name").Type == 3 {
					t.Fatalf("a denied call was forwarded: %s", m)
				}
			}
		}
	})
}
