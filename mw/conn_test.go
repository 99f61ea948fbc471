package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

func TestConn(t *testing.T) {
	is := is.New(t)
	c := NewConn(EraUnknown)
	is.Equal(c.Era(), EraUnknown)
	_, ok := c.ClientInitialize()
	is.True(!ok) // no handshake yet
	_, ok = c.ServerInitialize()
	is.True(!ok)
	is.Equal(c.ProtocolVersion(), "")

	c.SetEra(EraSession)
	is.Equal(c.Era(), EraSession)
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"c"}}}`)
	res := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"s"}}}`)
	c.Initialized(req, res)
	got, ok := c.ClientInitialize()
	is.True(ok)
	is.Equal(got.String(), req.String())
	got, ok = c.ServerInitialize()
	is.True(ok)
	is.Equal(got.Get("result.serverInfo.name").String(), "s")
	is.Equal(c.ProtocolVersion(), "2025-06-18") // the server's choice

	c.SetPrincipal("https://issuer.example#alice")
	is.Equal(c.Principal(), "https://issuer.example#alice")

	is.True(ConnOf(context.Background()) == nil)
	is.True(ConnOf(WithConn(context.Background(), c)) == c)
	is.Equal(EraSession.String(), "session era")
	is.Equal(EraStateless.String(), "2026-07-28")
	is.Equal(EraUnknown.String(), "unknown")
}

// TestConnClientMeta: what a 2026-07-28 client says of itself in _meta is
// kept, the last object of each key; anything else is ignored.
func TestConnClientMeta(t *testing.T) {
	is := is.New(t)
	is.Equal(clientInfoKey, gjson.Escape(mcp.MetaClientInfo))
	is.Equal(clientCapabilitiesKey, gjson.Escape(mcp.MetaClientCapabilities))
	c := NewConn(EraUnknown)
	info, caps := c.ClientMeta()
	is.True(info == nil && caps == nil)
	c.NoteClientMeta(frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}}`))
	c.NoteClientMeta(frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":"not an object","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	c.NoteClientMeta(frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}`))
	info, caps = c.ClientMeta()
	is.Equal(string(info), `{"name":"h","version":"1"}`)
	is.Equal(string(caps), `{}`)
}
