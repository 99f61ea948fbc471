package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
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
