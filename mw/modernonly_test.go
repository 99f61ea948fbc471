package mw

import (
	"errors"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestModernOnly(t *testing.T) {
	for _, tt := range []struct {
		name     string
		method   string // HTTP
		body     string // "" for none
		header   http.Header
		versions []string
		status   int // 0: taken (202 for a notification)
		allow    string
		want     string
	}{
		{name: "GET", method: http.MethodGet, header: hdr("Mcp-Session-Id", "s1"), status: 405, allow: "POST"},
		{name: "DELETE", method: http.MethodDelete, header: hdr("Mcp-Session-Id", "s1"), status: 405, allow: "POST"},
		{name: "initialize", method: http.MethodPost,
			body:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}`},
		{name: "initialize with a 2026-07-28 header", method: http.MethodPost, header: hdr("MCP-Protocol-Version", "2026-07-28"),
			body:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-06-18"}}}`},
		{name: "initialize, two versions served", method: http.MethodPost, versions: []string{"2026-07-28", "2026-12-01"},
			body:   `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2024-11-05"}}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":"i","error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28","2026-12-01"],"requested":"2024-11-05"}}}`},
		{name: "a session's request", method: http.MethodPost, header: hdr("Mcp-Session-Id", "s1", "MCP-Protocol-Version", "2025-06-18"),
			body:   `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-06-18"}}}`},
		{name: "a request without a version header", method: http.MethodPost,
			body:   `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-03-26"}}}`},
		{name: "a version header alone (row 158)", method: http.MethodPost, header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"),
			body:   `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: params._meta is required on a 2026-07-28 request"}}`},
		{name: "a header naming a version not served", method: http.MethodPost, header: hdr("MCP-Protocol-Version", "2026-12-01"),
			body:   `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2026-12-01"}}}`},
		{name: "a session-era notification", method: http.MethodPost,
			body:   `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-03-26"}}}`},
		{name: "a response", method: http.MethodPost, header: hdr("MCP-Protocol-Version", "2025-11-25"),
			body:   `{"jsonrpc":"2.0","id":"mcp-stdio/x/1","result":{}}`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}`},
		{name: "a batch", method: http.MethodPost,
			body:   `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
			status: 400,
			want:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only","data":{"supported":["2026-07-28"],"requested":"2025-03-26"}}}`},
		{name: "a 2026-07-28 client's notification", method: http.MethodPost, header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "notifications/cancelled"),
			body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			next := &recorder{}
			h := ModernOnly(tt.versions...)(Duplex{ToServer: next, ToClient: Discard()}).ToServer
			var m frame.Message
			if tt.body != "" {
				m = frame.MustParse(tt.body)
			}
			x := &fakeExchange{method: tt.method, sse: tt.method == http.MethodGet}
			err := h.Handle(on(t.Context(), x), m.WithHeaders(tt.header))
			status, body := refusal(err)
			is.Equal(status, tt.status)
			is.Equal(body, tt.want)
			is.Equal(len(next.all()), 0) // nothing passes
			if tt.allow != "" {
				var st *frame.StatusError
				is.True(errors.As(err, &st))
				is.Equal(st.Header.Get("Allow"), tt.allow)
			}
		})
	}
}
