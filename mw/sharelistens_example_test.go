package mw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// zeros reads as an endless run of zero bytes: a fixed random part for
// minted ids, so that the example's output does not change.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Two 2026-07-28 clients listen for tool list changes on a dual-era child:
// the child is sent one listen, and each client gets its own copy of the
// child's ack and events, under its own id.
func ExampleShareListens() {
	conn := mw.NewConn(mw.EraStateless)
	defer conn.Close(errors.New("done"))
	ctx := mw.WithConn(context.Background(), conn)

	toChild := make(chan frame.Message, 8)
	child := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		toChild <- m
		return nil
	})
	toClient := make(chan frame.Message, 8)
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		toClient <- m
		return nil
	})
	stage, listens := mw.ShareListens(mw.ShareListensOptions{Rand: zeros{}})
	d := stage(mw.Duplex{ToServer: child, ToClient: client})

	// Two listens, under the ids the Router minted for them.
	for _, id := range []string{"a", "b"} {
		_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"`+id+`","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`))
	}
	up := <-toChild
	fmt.Println("child got", up)
	// The child acknowledges its listen, then its tools change.
	sid := string(up.ID())
	_ = d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`))
	_ = d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`))
	var got []string
	for range 4 {
		got = append(got, (<-toClient).String())
	}
	// Each client's frames come in order; the two clients' interleave.
	for _, id := range []string{"a", "b"} {
		for _, m := range got {
			if strings.Contains(m, `subscriptionId":"`+id+`"`) {
				fmt.Println(id, "got", m)
			}
		}
	}
	_ = listens.Close(context.Background())
	fmt.Println("child got", <-toChild)
	// Output:
	// child got {"jsonrpc":"2.0","id":"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}
	// a got {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}
	// a got {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}
	// b got {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"b"}}}
	// b got {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"b"}}}
	// child got {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/1","reason":"the gateway is shutting down"}}
}

// Two 2026-07-28 clients ask a dual-era child for different notifications:
// the child is sent a listen for the first, then one for both (the first
// stays open on the child, parked, so that its end cannot take the
// second's subscriptions with it on a server that keeps them per
// connection); each client's ack says only what it asked for, and each
// gets only the events it asked for.
func ExampleShareListens_union() {
	conn := mw.NewConn(mw.EraStateless)
	defer conn.Close(errors.New("done"))
	ctx := mw.WithConn(context.Background(), conn)

	toChild := make(chan frame.Message, 8)
	child := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		toChild <- m
		return nil
	})
	toClient := make(chan frame.Message, 8)
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		toClient <- m
		return nil
	})
	stage, listens := mw.ShareListens(mw.ShareListensOptions{Rand: zeros{}})
	d := stage(mw.Duplex{ToServer: child, ToClient: client})

	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"a","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`))
	first := <-toChild
	_ = d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(first.ID())+`}}}`))
	fmt.Println("a got", <-toClient)

	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"b","method":"subscriptions/listen","params":{"notifications":{"promptsListChanged":true}}}`))
	both := <-toChild
	fmt.Println("child got", both)
	sid := string(both.ID())
	_ = d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`))
	fmt.Println("b got", <-toClient)
	_ = d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`))
	fmt.Println("b got", <-toClient)
	_ = listens.Close(context.Background())
	// Output:
	// a got {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}
	// child got {"jsonrpc":"2.0","id":"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/2","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}
	// b got {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"promptsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"b"}}}
	// b got {"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"b"}}}
}

// A stage that mints ids toward a server many clients share gives its
// minter a random part first: its ids are then "mcp-stdio/<stage>/<random>/<n>".
func ExampleIDMinter_Randomize() {
	var ids mw.IDMinter
	fmt.Println(ids.Mint("demo")) // a counter alone
	if err := ids.Randomize(zeros{}); err != nil {
		panic(err)
	}
	fmt.Println(ids.Mint("demo")) // with crypto/rand (a nil reader), 16 random characters
	// Output:
	// "mcp-stdio/demo/1"
	// "mcp-stdio/demo/AAAAAAAAAAAAAAAA/2"
}
