package mw

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// fakeChild stands for a child process of StartChild: it answers
// server/discover with -32601 and initialize with a result, on its own
// goroutine through its messages' handler, or, when dieOnDiscover or
// dieOnInitialize, exits on that method without a word.
type fakeChild struct {
	fromChild       Handler
	dieOnDiscover   bool
	dieOnInitialize bool
	sent            recorder
	wg              sync.WaitGroup

	mu     sync.Mutex
	done   chan struct{}
	ended  bool // on its own
	closed bool
}

func newFakeChild(fromChild Handler) *fakeChild {
	return &fakeChild{fromChild: fromChild, done: make(chan struct{})}
}

func (c *fakeChild) Handle(ctx context.Context, m frame.Message) error {
	_ = c.sent.Handle(ctx, m)
	if m.Kind() != frame.Request {
		return nil
	}
	if (m.Method() == "server/discover" && c.dieOnDiscover) || (m.Method() == "initialize" && c.dieOnInitialize) {
		c.end(true)
		return nil
	}
	answer := frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound, "method not found")
	if m.Method() == "initialize" {
		answer = answerWith(m, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"child","version":"1"}}`)
	}
	c.wg.Go(func() { _ = c.fromChild.Handle(context.Background(), answer) })
	return nil
}

func (c *fakeChild) end(own bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.closed {
		return
	}
	c.ended, c.closed = own, !own
	close(c.done)
}

func (c *fakeChild) Done() <-chan struct{} { return c.done }
func (c *fakeChild) Close(context.Context) error {
	c.end(false)
	return nil
}
func (c *fakeChild) EndedOnItsOwn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}
func (c *fakeChild) Err() error {
	if c.EndedOnItsOwn() {
		return errors.New("exit status 1")
	}
	return nil
}
func (c *fakeChild) StderrExcerpt() string { return "Error: Cannot find module '/missing.js'" }

// methods returns the methods of the requests the child was sent.
func (c *fakeChild) methods() []string {
	var out []string
	for _, m := range c.sent.all() {
		if m.Kind() == frame.Request {
			out = append(out, m.Method())
		}
	}
	return out
}

// TestStartChild: the start policy. A child that exits on server/discover
// is started again and taken for one of the session era (initialize at
// once); when that one ends during its handshake too, the start fails
// with the child's exit, its stderr and the advice, and the outcome is
// told on one line; a session-era child is initialized after its
// server/discover; a failure of start is returned as it is.
func TestStartChild(t *testing.T) {
	type run struct {
		children []*fakeChild
		outcomes []error
	}
	startWith := func(r *run, configure ...func(*fakeChild)) (func(Handler) (*fakeChild, error), StartChildOptions) {
		start := func(fromChild Handler) (*fakeChild, error) {
			n := len(r.children)
			if n >= len(configure) {
				return nil, errors.New("cannot start")
			}
			c := newFakeChild(fromChild)
			configure[n](c)
			r.children = append(r.children, c)
			return c, nil
		}
		return start, StartChildOptions{
			Conn:    NewConn(EraUnknown),
			Own:     NewChildAnswers(ChildAnswersOptions{}),
			Outcome: func(err error) { r.outcomes = append(r.outcomes, err) },
		}
	}
	wait := func(r *run) {
		for _, c := range r.children {
			c.wg.Wait()
		}
	}
	session := func(*fakeChild) {}
	diesOnDiscover := func(c *fakeChild) { c.dieOnDiscover = true }
	diesOnInitialize := func(c *fakeChild) { c.dieOnInitialize = true }

	t.Run("a session-era child", func(t *testing.T) {
		is := is.New(t)
		r := &run{}
		start, o := startWith(r, session)
		c, late, err := StartChild(context.Background(), start, o)
		wait(r)
		is.NoErr(err)
		is.True(c == r.children[0] && late != nil)
		is.Equal(c.methods(), []string{"server/discover", "initialize"})
		is.Equal(o.Conn.Era(), EraSession)
		is.Equal(r.outcomes, []error{nil})
	})
	t.Run("exits on server/discover: started again as session era", func(t *testing.T) {
		is := is.New(t)
		r := &run{}
		start, o := startWith(r, diesOnDiscover, session)
		c, _, err := StartChild(context.Background(), start, o)
		wait(r)
		is.NoErr(err)
		is.Equal(len(r.children), 2)
		is.True(c == r.children[1])
		is.Equal(r.children[0].methods(), []string{"server/discover"})
		is.Equal(c.methods(), []string{"initialize"}) // SkipDiscover
		is.Equal(o.Conn.Era(), EraSession)
		is.Equal(r.outcomes, []error{nil}) // the first exit is not a failed start
	})
	t.Run("the one started again exits too", func(t *testing.T) {
		is := is.New(t)
		r := &run{}
		start, o := startWith(r, diesOnDiscover, diesOnInitialize)
		_, _, err := StartChild(context.Background(), start, o)
		wait(r)
		var exit *ChildExitError
		is.True(errors.As(err, &exit))
		is.True(strings.HasPrefix(err.Error(), "the server process exited during its handshake (exit status 1). Its stderr:\nError: Cannot find module"))
		is.Equal(len(r.outcomes), 1)
		is.True(strings.HasPrefix(r.outcomes[0].Error(), "the server process exited during its handshake (exit status 1); likely cause: a module or script"))
		is.Equal(len(r.children), 2)
	})
	t.Run("a failed start is returned as it is", func(t *testing.T) {
		is := is.New(t)
		r := &run{}
		start, o := startWith(r)
		_, _, err := StartChild(context.Background(), start, o)
		is.Equal(err.Error(), "cannot start")
		is.Equal(len(r.outcomes), 0)
	})
}
