package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// tagging is a stage that records what passes it, both ways.
func tagging(seen *[]string) Middleware {
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				*seen = append(*seen, "up "+m.String())
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				*seen = append(*seen, "down "+m.String())
				return next.ToClient.Handle(ctx, m)
			}),
		}
	}
}

func TestForModernHostRoutes(t *testing.T) {
	const (
		modernReq  = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
		sessionReq = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}`
		discover   = `{"jsonrpc":"2.0","id":3,"method":"server/discover"}`
		initialize = `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}`
		cancel     = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`
		answer     = `{"jsonrpc":"2.0","id":"s1","result":{}}`
		serverReq  = `{"jsonrpc":"2.0","id":"s2","method":"roots/list"}`
		changed    = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	)
	for _, c := range []struct {
		name     string
		up, down []string
		want     []string
	}{
		{"nothing yet", []string{sessionReq, cancel, answer}, []string{serverReq, changed}, nil},
		{"2026-07-28 host", []string{modernReq, sessionReq, cancel, answer}, []string{serverReq, changed},
			[]string{"up " + modernReq, "up " + cancel, "down " + serverReq, "down " + changed}},
		{"server/discover counts", []string{discover}, []string{serverReq},
			[]string{"up " + discover, "down " + serverReq}},
		{"session-era host", []string{initialize, modernReq, cancel}, []string{serverReq}, nil},
		{"initialize later", []string{modernReq, initialize, modernReq}, []string{serverReq},
			[]string{"up " + modernReq}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			var seen []string
			s := &fakeServer{}
			toServer, client := pipeline(s, ForModernHost(tagging(&seen)))
			for _, m := range c.up {
				is.NoErr(toServer.Handle(t.Context(), frame.MustParse(m)))
			}
			for _, m := range c.down {
				is.NoErr(s.up.Handle(t.Context(), frame.MustParse(m)))
			}
			is.Equal(seen, c.want)                 // what went through the stage
			is.Equal(len(s.sent.all()), len(c.up)) // everything reached the server
			is.Equal(len(client.all()), len(c.down))
		})
	}
}

func TestForModernHostOfNil(t *testing.T) {
	is := is.New(t)
	is.True(ForModernHost(nil) == nil)
}
