package mw_test

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A Reached shared by the retry stages of one server: while the server
// has never answered, a refused connection is reported at once; once it
// has answered, a refusal is a server gone away, and tried again.
func ExampleReached() {
	var reached mw.Reached
	up := false // the server's state
	server := mw.HandlerFunc(func(context.Context, frame.Message) error {
		if !up {
			return &frame.SendError{Err: syscall.ECONNREFUSED}
		}
		return nil
	})
	attempts := 0
	counted := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		attempts++
		err := server.Handle(ctx, m)
		up = true // it comes up after the first attempt
		return err
	})
	retry := mw.Retry(mw.RetryOptions{
		Reached: &reached,
		Sleep:   func(context.Context, time.Duration) error { return nil },
	})(mw.Duplex{ToServer: counted}).ToServer
	ping := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)

	fmt.Println(retry.Handle(context.Background(), ping), attempts, reached.Reached())
	fmt.Println(retry.Handle(context.Background(), ping), attempts, reached.Reached())
	up = false // it goes away; the next attempt finds it back
	fmt.Println(retry.Handle(context.Background(), ping), attempts)
	// Output:
	// connection refused 1 false
	// <nil> 2 true
	// <nil> 4
}
