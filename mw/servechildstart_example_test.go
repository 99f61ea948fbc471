package mw_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// exampleChild is a child of the session era for the example: it exits
// on server/discover when exitOnDiscover, and answers initialize on its
// own goroutine, as a child process answers on its stdout.
type exampleChild struct {
	fromChild      mw.Handler
	exitOnDiscover bool
	done           chan struct{}
	once           sync.Once
	wg             *sync.WaitGroup
}

func (c *exampleChild) Handle(_ context.Context, m frame.Message) error {
	if m.Kind() != frame.Request {
		return nil
	}
	fmt.Println("child got", m.Method())
	if c.exitOnDiscover {
		c.once.Do(func() { close(c.done) })
		return nil
	}
	answer, _ := frame.Parse([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID().Raw()) +
		`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"child","version":"1"}}}`))
	c.wg.Go(func() { _ = c.fromChild.Handle(context.Background(), answer) })
	return nil
}
func (c *exampleChild) Done() <-chan struct{} { return c.done }
func (c *exampleChild) Close(context.Context) error {
	c.once.Do(func() { close(c.done) })
	return nil
}
func (c *exampleChild) EndedOnItsOwn() bool   { return c.exitOnDiscover }
func (c *exampleChild) Err() error            { return nil }
func (c *exampleChild) StderrExcerpt() string { return "" }

// A child that exits on server/discover is started again and taken for
// one of the session era: it gets initialize at once.
func ExampleStartChild() {
	var wg sync.WaitGroup
	defer wg.Wait()
	starts := 0
	start := func(fromChild mw.Handler) (*exampleChild, error) {
		starts++
		fmt.Println("start", starts)
		return &exampleChild{fromChild: fromChild, exitOnDiscover: starts == 1, done: make(chan struct{}), wg: &wg}, nil
	}
	conn := mw.NewConn(mw.EraUnknown)
	_, _, err := mw.StartChild(context.Background(), start, mw.StartChildOptions{
		Conn:    conn,
		Own:     mw.NewChildAnswers(mw.ChildAnswersOptions{}),
		Outcome: func(err error) { fmt.Println("outcome:", err) },
	})
	fmt.Println(err, conn.Era())
	// Output:
	// start 1
	// child got server/discover
	// start 2
	// child got initialize
	// outcome: <nil>
	// <nil> session era
}
