package mw

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// sessionChild returns the Conn of a child of the session era the gateway
// initialized, whose serverInfo is {"name":"child","version":"1.0"}.
func sessionChild() *Conn {
	c := NewConn(EraSession)
	c.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/handshake/1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-stdio","version":"t"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/handshake/1","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}},"serverInfo":{"name":"child","version":"1.0"},"instructions":"be kind"}}`))
	return c
}

func TestStampResults(t *testing.T) {
	const info = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}}`
	cases := []struct {
		name    string
		method  string
		request string // "" means a modern request of method with no params but _meta
		result  string // the result member's value
		want    string // the result member's value; "" means the same bytes
		ttl     time.Duration
		noInit  bool
	}{
		{name: "a call", method: "tools/call", result: `{"content":[]}`, want: `{"content":[],"resultType":"complete",` + info + `}`},
		{name: "an empty result", method: "tools/call", result: `{}`, want: `{"resultType":"complete",` + info + `}`},
		{name: "a list, cacheable", method: "tools/list", result: `{"tools":[],"nextCursor":"c"}`, want: `{"tools":[],"nextCursor":"c","resultType":"complete","ttlMs":60000,"cacheScope":"private",` + info + `}`},
		{name: "each of the six", method: "resources/templates/list", result: `{"resourceTemplates":[]}`, want: `{"resourceTemplates":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private",` + info + `}`},
		{name: "resources/read", method: "resources/read", result: `{"contents":[]}`, want: `{"contents":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private",` + info + `}`},
		{name: "the TTL option", method: "prompts/list", ttl: 1500 * time.Millisecond, result: `{"prompts":[]}`, want: `{"prompts":[],"resultType":"complete","ttlMs":1500,"cacheScope":"private",` + info + `}`},
		{name: "a negative TTL is 0", method: "resources/list", ttl: -1, result: `{"resources":[]}`, want: `{"resources":[],"resultType":"complete","ttlMs":0,"cacheScope":"private",` + info + `}`},
		{name: "what is there is kept", method: "tools/list", result: `{"tools":[],"cacheScope":"public","resultType":"complete"}`, want: `{"tools":[],"cacheScope":"public","resultType":"complete","ttlMs":60000,` + info + `}`},
		{name: "serverInfo into an existing _meta", method: "tools/call", result: `{ "_meta" : { "k" : 1 } , "content":[] }`, want: `{ "_meta" : { "k" : 1 ,"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}} , "content":[] ,"resultType":"complete"}`},
		{name: "serverInfo into an empty _meta", method: "tools/call", result: `{"_meta":{}}`, want: `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}},"resultType":"complete"}`},
		{name: "a serverInfo of its own", method: "tools/call", result: `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"}}}`},
		{name: "a _meta that is not an object", method: "tools/call", result: `{"resultType":"complete","_meta":7}`},
		{name: "input_required: no cache hints", method: "resources/read", result: `{"resultType":"input_required","requestState":"s"}`, want: `{"resultType":"input_required","requestState":"s",` + info + `}`},
		{name: "no handshake: no serverInfo", method: "tools/list", noInit: true, result: `{"tools":[]}`, want: `{"tools":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private"}`},
		{name: "nothing to add", method: "tools/list", noInit: true, result: `{"tools":[],"resultType":"complete","ttlMs":5,"cacheScope":"public"}`},
		{name: "a result that is not an object", method: "tools/call", result: `[]`},
		{name: "numbers and spacing kept", method: "tools/call", result: `{"n": 1.50, "s":"\u00e9"}`, want: `{"n": 1.50, "s":"\u00e9","resultType":"complete",` + info + `}`},
		{
			name: "a session-era request's result is not stamped", method: "tools/list",
			request: `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/list"}`, result: `{"tools":[]}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			conn := sessionChild()
			if c.noInit {
				conn = NewConn(EraSession)
			}
			ctx := WithConn(context.Background(), conn)
			req := c.request
			if req == "" {
				req = `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"` + c.method + `","params":{` + modernMeta + `}}`
			}
			in := frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":` + c.result + `}`)
			s := &fakeServer{answer: func(context.Context, frame.Message) ([]frame.Message, error) { return []frame.Message{in}, nil }}
			toServer, client := pipeline(s, StampResults(StampOptions{CacheTTL: c.ttl}))
			is.NoErr(toServer.Handle(ctx, frame.MustParse(req)))
			got := client.all()
			is.Equal(len(got), 1)
			if c.want == "" {
				is.Equal(got[0].String(), in.String())
				is.Equal(&got[0].Bytes()[0], &in.Bytes()[0]) // the same bytes
				return
			}
			is.Equal(got[0].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":`+c.want+`}`)
		})
	}
}

// TestStampResultsForgets: a request is remembered until its answer (a
// result or an error), or until its Handle fails, or the connection ends;
// a second result for the same id is not stamped.
func TestStampResultsForgets(t *testing.T) {
	is := is.New(t)
	conn := sessionChild()
	ctx := WithConn(context.Background(), conn)
	fail := errors.New("child gone")
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch m.ID() {
		case `"e"`:
			return []frame.Message{frame.ErrorResponse(m.ID(), -32601, "no")}, nil
		case `"f"`:
			return nil, fail
		}
		return nil, nil // answered later, as a child does
	}}
	toServer, client := pipeline(s, StampResults(StampOptions{}))
	modern := func(id string) frame.Message {
		return frame.MustParse(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/list","params":{` + modernMeta + `}}`)
	}
	is.NoErr(toServer.Handle(ctx, modern("e")))
	is.True(errors.Is(toServer.Handle(ctx, modern("f")), fail))
	is.NoErr(toServer.Handle(ctx, modern("a")))
	is.NoErr(toServer.Handle(ctx, modern("b")))

	late := frame.MustParse(`{"jsonrpc":"2.0","id":"a","result":{}}`)
	is.NoErr(s.up.Handle(ctx, late))
	is.NoErr(s.up.Handle(ctx, late)) // a second answer: not the request's any more
	conn.Close(errors.New("reaped"))
	is.NoErr(s.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"b","result":{}}`))) // forgotten at close
	is.NoErr(s.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"f","result":{}}`))) // forgotten on failure
	is.NoErr(s.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"e","result":{}}`))) // forgotten on its error
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":"e","error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete","ttlMs":60000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}}}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"2.0","id":"b","result":{}}`,
		`{"jsonrpc":"2.0","id":"f","result":{}}`,
		`{"jsonrpc":"2.0","id":"e","result":{}}`,
	})
}

// TestStampResultAllocations: stamping a result is one edit: the members
// built, the message copied once with them (parsing the copy takes the
// rest).
func TestStampResultAllocations(t *testing.T) {
	m := frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"tools":[{"name":"a"}],"_meta":{"k":1}}}`)
	ttl := []byte("60000")
	n := testing.AllocsPerRun(100, func() { _, _ = stampResult(m, "tools/list", `{"name":"child","version":"1.0"}`, ttl) })
	if n > 4 {
		t.Errorf("stamping a result allocates %v times, want at most 4", n)
	}
}
