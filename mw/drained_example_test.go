package mw_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A gateway whose drain is over: a session's request is refused with 404,
// so that its client starts a new session elsewhere, and a 2026-07-28
// request with 503 and Retry-After; a notification still passes (here to
// a stand-in for the sessions that prints it).
func ExampleRefuseAfterDrain() {
	var drained atomic.Bool
	sessions := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("to the sessions:", m.Method())
		return nil
	})
	entry := mw.RefuseAfterDrain(mw.AfterDrainOptions{Drained: drained.Load})(mw.Duplex{ToServer: sessions, ToClient: mw.Discard()}).ToServer

	send := func(sid, body string) {
		m := frame.MustParse(body)
		if sid != "" {
			m = m.WithHeader("Mcp-Session-Id", sid)
		}
		var refused *frame.StatusError
		if err := entry.Handle(context.Background(), m); errors.As(err, &refused) {
			fmt.Println(refused.Code, refused.Header.Get("Retry-After"), string(refused.Body))
		}
	}
	send("s-1", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	drained.Store(true)
	send("s-1", `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	send("", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	send("s-1", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	// Output:
	// to the sessions: ping
	// 404  {"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"session ended: the gateway has drained and is shutting down; start a new session"}}
	// 503 1 {"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"the gateway has drained and is shutting down: retry after 1s (behind a load balancer, the retry reaches another replica)"}}
	// to the sessions: notifications/cancelled
}
