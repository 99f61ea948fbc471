package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestLocalDiscover(t *testing.T) {
	const discover = `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","method":"server/discover","params":{` + modernMeta + `}}`
	cases := []struct {
		name   string
		result string // the initialize result; "" for none
		o      LocalDiscoverOptions
		want   string
	}{
		{
			name:   "resources.subscribe removed by default",
			result: `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}},"serverInfo":{"name":"child","version":"1.0"},"instructions":"be kind"}`,
			want:   `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true}},"instructions":"be kind","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}}}}`,
		},
		{
			name:   "kept when the gateway can deliver it",
			result: `{"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true}},"serverInfo":{"name":"c","version":"2","title":"C"}}`,
			o: LocalDiscoverOptions{
				SupportedVersions:     []string{"2026-07-28", "2027-01-01"},
				KeepResourceSubscribe: func(caps gjson.Result) bool { return caps.Get("resources.subscribe").Bool() },
			},
			want: `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","result":{"resultType":"complete","supportedVersions":["2026-07-28","2027-01-01"],"capabilities":{"resources":{"subscribe":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"c","version":"2","title":"C"}}}}`,
		},
		{
			name:   "values byte for byte",
			result: `{"capabilities":{"experimental":{"x":1.50},"logging":{}},"serverInfo":{"name":"ü","version":"1"},"instructions":"line\nbreak \u00e9"}`,
			want:   `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"experimental":{"x":1.50},"logging":{}},"instructions":"line\nbreak \u00e9","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ü","version":"1"}}}}`,
		},
		{
			name:   "no capabilities, no serverInfo",
			result: `{"protocolVersion":"2025-11-25"}`,
			want:   `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}`,
		},
		{
			name: "no handshake",
			want: `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","error":{"code":-32603,"message":"server/discover: the server's initialize result is not known"}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			conn := NewConn(EraSession)
			if c.result != "" {
				conn.Initialized(frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`), frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":`+c.result+`}`))
			}
			s := &fakeServer{}
			toServer, client := pipeline(s, LocalDiscover(c.o))
			is.NoErr(toServer.Handle(WithConn(context.Background(), conn), frame.MustParse(discover)))
			is.Equal(len(s.sent.all()), 0) // never forwarded
			is.Equal(client.lines(), []string{c.want})
		})
	}
}

// TestLocalDiscoverPasses: everything but server/discover goes on, both
// ways, as the same bytes.
func TestLocalDiscoverPasses(t *testing.T) {
	is := is.New(t)
	up := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":[]}}`)
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Kind() != frame.Request {
			return nil, nil
		}
		return []frame.Message{up}, nil
	}}
	toServer, client := pipeline(s, LocalDiscover(LocalDiscoverOptions{}))
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`)
	note := frame.MustParse(`{"jsonrpc":"2.0","method":"server/discover"}`) // not a request
	ctx := WithConn(context.Background(), sessionChild())
	is.NoErr(toServer.Handle(ctx, req))
	is.NoErr(toServer.Handle(ctx, note))
	sent := s.sent.all()
	is.Equal(len(sent), 2)
	is.Equal(&sent[0].Bytes()[0], &req.Bytes()[0])
	is.Equal(&sent[1].Bytes()[0], &note.Bytes()[0])
	is.Equal(client.lines(), []string{up.String()})
}

// TestTranslateChain: the three bridges as serve lists them for a child of
// the session era (StampResults outside LocalDiscover and StripModernMeta):
// the discover answered with the cache hints added, a list stripped on its
// way in and stamped on its way out.
func TestTranslateChain(t *testing.T) {
	is := is.New(t)
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		return []frame.Message{answerWith(m, `{"tools":[]}`)}, nil
	}}
	toServer, client := pipeline(s,
		StampResults(StampOptions{}),
		LocalDiscover(LocalDiscoverOptions{}),
		StripModernMeta(),
	)
	ctx := WithConn(context.Background(), sessionChild())
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"server/discover","params":{`+modernMeta+`}}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","method":"tools/list","params":{`+modernMeta+`}}`)))
	is.Equal(s.sent.lines(), []string{`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","method":"tools/list","params":{}}`})
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true}},"instructions":"be kind","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}},"ttlMs":60000,"cacheScope":"private"}}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"tools":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1.0"}}}}`,
	})
}
