package mcp_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// The gateway's own messages, byte for byte.
func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		got  frame.Message
		want string
		kind frame.Kind
	}{
		{"initialize", mcp.InitializeRequest("1", mcp.LatestSessionEraVersion, []byte(`{}`), mcp.Implementation("mcp-stdio", "check")),
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-stdio","version":"check"}}}`,
			frame.Request},
		{"initialize string id, escapes", mcp.InitializeRequest(`"a"`, "2025-03-26", []byte(`{"roots":{}}`), mcp.Implementation(`x"<y>`, "1\n")),
			`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"roots":{}},"clientInfo":{"name":"x\"\u003cy\u003e","version":"1\n"}}}`,
			frame.Request},
		{"initialized", mcp.InitializedNotification(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`, frame.Notification},
		{"discover", mcp.DiscoverRequest("0", []byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)),
			`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			frame.Request},
		{"cancelled", mcp.CancelledNotification(`"m/1"`, "the client went away"),
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"m/1","reason":"the client went away"}}`, frame.Notification},
		{"cancelled without reason", mcp.CancelledNotification("7", ""),
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, frame.Notification},
		{"ping", mcp.PingRequest("9"), `{"jsonrpc":"2.0","id":9,"method":"ping"}`, frame.Request},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(tt.got.String(), tt.want)
			is.Equal(tt.got.Kind(), tt.kind)
			parsed, err := frame.Parse([]byte(tt.want))
			is.NoErr(err)
			is.Equal(parsed.Method(), tt.got.Method())
			is.Equal(parsed.ID(), tt.got.ID())
		})
	}
}

func TestDiscoverRetryVersion(t *testing.T) {
	ours := []string{"2027-03-01", mcp.ModernVersion}
	tests := []struct {
		name, answer string
		want         string
		ok           bool
	}{
		{"lists ours", `{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"no","data":{"supported":["2026-07-28"],"requested":"2027-03-01"}}}`, "2026-07-28", true},
		{"first listed of ours", `{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"no","data":{"supported":["2025-11-25","2026-07-28","2027-03-01"]}}}`, "2026-07-28", true},
		{"legacy only", `{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"no","data":{"supported":["2025-06-18","2025-11-25"]}}}`, "", false},
		{"no data", `{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"no"}}`, "", false},
		{"not strings", `{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"no","data":{"supported":[20260728,{"v":"2026-07-28"}]}}}`, "", false},
		{"another code", `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"no","data":{"supported":["2026-07-28"]}}}`, "", false},
		{"a result", `{"jsonrpc":"2.0","id":0,"result":{"supportedVersions":["2026-07-28"]}}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v, ok := mcp.DiscoverRetryVersion(frame.MustParse(tt.answer), ours)
			is.Equal(v, tt.want)
			is.Equal(ok, tt.ok)
		})
	}
}
