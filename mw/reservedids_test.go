package mw

import (
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestReservedIDs(t *testing.T) {
	is := is.New(t)
	server, client := &recorder{}, &recorder{}
	d := ReservedIDs(nil)(Duplex{ToServer: server, ToClient: client})
	ctx := t.Context()

	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"ping"}`)))
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"my-mcp-stdio/page/1","method":"ping"}`)))
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/x","result":{}}`))) // the client's answer to a server request
	is.Equal(server.lines(), []string{
		`{"jsonrpc":"2.0","id":"my-mcp-stdio/page/1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/x","result":{}}`,
	})

	is.NoErr(d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/page/9","result":{}}`)))     // late answer to a minted id
	is.NoErr(d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/page/9","method":"ping"}`))) // a server request passes
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/page/1","error":{"code":-32600,"message":"invalid request: ids starting with \"mcp-stdio/\" are reserved"}}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/page/9","method":"ping"}`,
	})
}
