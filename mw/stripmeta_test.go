package mw

import (
	"context"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestStripModernMeta(t *testing.T) {
	const v = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	cases := []struct {
		name, in, want string // want "" means the same bytes
	}{
		{
			name: "only reserved keys: _meta goes",
			in:   `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/list","params":{"_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`,
			want: `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/list","params":{}}`,
		},
		{
			name: "other keys kept in order, byte for byte",
			in:   `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken": 1.50,` + v + `,"traceparent":"00-ab-cd-01", "io.modelcontextprotocol/logLevel":"info","x.example/k":{"a" : [1]}},"arguments":{}}}`,
			want: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken": 1.50,"traceparent":"00-ab-cd-01","x.example/k":{"a" : [1]}},"arguments":{}}}`,
		},
		{
			name: "the first key kept is not the first one",
			in:   `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","_meta":{ ` + v + ` , "baggage":"k=v" }}}`,
			want: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","_meta":{ "baggage":"k=v" }}}`,
		},
		{
			name: "the last key kept is not the last one",
			in:   `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"_meta":{"progressToken":"p",` + v + `},"name":"n"}}`,
			want: `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"_meta":{"progressToken":"p"},"name":"n"}}`,
		},
		{
			name: "an escaped key is a reserved key",
			in:   `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + v + `,"io.modelcontextprotocol\/clientInfo":{},"k":1}}}`,
			want: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"k":1}}}`,
		},
		{
			name: "inputResponses and requestState are not _meta",
			in:   `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","inputResponses":{"k":{}},"requestState":"s","_meta":{` + v + `}}}`,
			want: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","inputResponses":{"k":{}},"requestState":"s"}}`,
		},
		{
			name: "a modern notification",
			in:   `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{` + v + `}}}`,
			want: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		},
		{
			name: "server/discover without _meta passes",
			in:   `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
		},
		{
			name: "a session-era request keeps its reserved keys",
			in:   `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}`,
		},
		{
			name: "a modern request with no reserved key but the version is never seen: only other keys",
			in:   `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"progressToken":1}}}`,
		},
		{
			name: "a response passes",
			in:   `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/1","result":{"_meta":{` + v + `}}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			s := &fakeServer{}
			toServer, _ := pipeline(s, StripModernMeta())
			in := frame.MustParse(c.in).WithHeader(frame.HeaderMethod, "kept")
			is.NoErr(toServer.Handle(context.Background(), in))
			sent := s.sent.all()
			is.Equal(len(sent), 1)
			want := c.want
			if want == "" {
				want = c.in
				is.Equal(&sent[0].Bytes()[0], &in.Bytes()[0]) // the same bytes, not a copy
			}
			is.Equal(sent[0].String(), want)
			is.Equal(sent[0].Header(), http.Header{frame.HeaderMethod: {"kept"}}) // the side channel stays
		})
	}
}

func TestStripModernMetaClientBoundUntouched(t *testing.T) {
	is := is.New(t)
	s := &fakeServer{}
	_, client := pipeline(s, StripModernMeta())
	m := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	is.NoErr(s.up.Handle(context.Background(), m))
	is.Equal(client.lines(), []string{m.String()})
}
