package mw

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// AwaitAnswers is the stage nearest a server that answers on its own time
// (a child process, whose lines arrive on their own goroutine; see the
// package documentation). It makes
// that server keep, for the requests stages originate, the contract the
// relay's transport keeps for every request: Handle of a request whose id
// a stage minted ([IDMinter]; not the ids [ModernRouter] gives its
// clients' requests, nor a subscriptions/listen, answered only when it
// ends) returns once the answer has been handed client-bound
// — so [Remap.Call] works over it — or fails when ctx ends or conn
// closes first. Every other message passes without waiting.
func AwaitAnswers(conn *Conn) Middleware {
	return func(next Duplex) Duplex {
		a := &awaitAnswers{next: next, waiting: make(map[frame.ID]chan struct{}), closed: make(chan struct{})}
		if conn != nil {
			conn.OnClose(func(error) { a.closeOnce.Do(func() { close(a.closed) }) })
		}
		return Duplex{ToServer: HandlerFunc(a.toServer), ToClient: HandlerFunc(a.toClient)}
	}
}

// routerIDPrefix starts the ids ModernRouter mints for clients' requests.
const routerIDPrefix = MintedIDPrefix + routerStage + "/"

type awaitAnswers struct {
	next      Duplex
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	waiting map[frame.ID]chan struct{}
}

func (a *awaitAnswers) toServer(ctx context.Context, m frame.Message) error {
	id := m.ID()
	if m.Kind() != frame.Request || !IsMinted(id) || strings.HasPrefix(string(id), routerIDPrefix) || m.Method() == listenMethod {
		return a.next.ToServer.Handle(ctx, m)
	}
	done := make(chan struct{})
	a.mu.Lock()
	a.waiting[id] = done
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, id)
		a.mu.Unlock()
	}()
	if err := a.next.ToServer.Handle(ctx, m); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-a.closed:
		return fmt.Errorf("mw: %s %s: %w", m.Method(), id, frame.ErrUnavailable)
	}
}

func (a *awaitAnswers) toClient(ctx context.Context, m frame.Message) error {
	if !m.Kind().IsResponse() {
		return a.next.ToClient.Handle(ctx, m)
	}
	a.mu.Lock()
	done, ok := a.waiting[m.ID()]
	delete(a.waiting, m.ID())
	a.mu.Unlock()
	err := a.next.ToClient.Handle(ctx, m)
	if ok {
		close(done)
	}
	return err
}
