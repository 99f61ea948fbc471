package mw_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A tools/list asked again while the server's ttlMs lasts is answered
// from the cache, under its own id; a list_changed from the server drops
// it.
func ExampleResponseCache() {
	now := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	var up mw.Late
	transport := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		fmt.Println("server got", m.Method(), m.ID())
		return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"tools":[],"ttlMs":60000,"cacheScope":"public","resultType":"complete"}`)))
	})
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("client got", m)
		return nil
	})
	cache := mw.ResponseCache(mw.CacheOptions{Now: func() time.Time { return now }})
	p := cache(mw.Duplex{ToServer: transport, ToClient: client})
	up.Bind(p.ToClient)

	ctx := context.Background()
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	now = now.Add(30 * time.Second)
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	_ = p.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	// Output:
	// server got tools/list 1
	// client got {"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":60000,"cacheScope":"public","resultType":"complete"}}
	// client got {"jsonrpc":"2.0","id":2,"result":{"tools":[],"ttlMs":60000,"cacheScope":"public","resultType":"complete"}}
	// client got {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
	// server got tools/list 3
	// client got {"jsonrpc":"2.0","id":3,"result":{"tools":[],"ttlMs":60000,"cacheScope":"public","resultType":"complete"}}
}
