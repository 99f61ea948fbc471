package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultMaxPooledChildren bounds the children a [Pool] keeps.
const DefaultMaxPooledChildren = 16

// PoolOptions configures [NewPool].
type PoolOptions struct {
	// Start starts the server of a principal: a child behind its own
	// stages, handshaken (see [ChildHandshake]); required. ctx carries no
	// request: the child outlives it.
	Start func(ctx context.Context, principal string) (Backend, error)
	// MaxChildren bounds the children alive at once; 0 means
	// DefaultMaxPooledChildren. A principal without one when all are
	// busy gets 503; the one idle the longest is reaped to make room.
	MaxChildren int
	// IdleTTL reaps a child that has had no request in flight for this
	// long; 0 keeps children until they exit or the pool closes.
	IdleTTL time.Duration
	// AfterFunc times idle children; nil means time.AfterFunc. For tests.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Pool is serve's 2026-07-28 backend (see the package documentation): one
// server per principal, never per session ([PrincipalOf] a request's
// context; "" — no authentication, or one static token — is one principal
// like any other), started on its first request and shared by all of that
// principal's clients. A server that exits is started again by the next
// request (the requests in flight on it are answered by its stages); one
// idle for IdleTTL is closed; at most MaxChildren live at once (the one idle
// the longest makes room for a new one). A Pool is a
// [Handler]: every message handed to it goes to the principal's server. It
// is safe for concurrent use.
type Pool struct {
	o     PoolOptions
	log   *slog.Logger
	table *idleTable[*poolEntry]
}

// poolEntry is one principal's server.
type poolEntry struct {
	principal string
	lease     *idleEntry[*poolEntry]
	ready     chan struct{} // closed once started (b or err set)
	b         Backend
	err       error
}

// NewPool returns an empty pool.
func NewPool(o PoolOptions) *Pool {
	if o.MaxChildren <= 0 {
		o.MaxChildren = DefaultMaxPooledChildren
	}
	p := &Pool{o: o, log: loggerOrDiscard(o.Logger)}
	p.table = newIdleTable(o.MaxChildren, o.IdleTTL, o.AfterFunc, func(e *poolEntry) {
		p.closeEntry(e, "idle")
	})
	return p
}

// Len returns the number of servers alive or starting.
func (p *Pool) Len() int {
	n, _ := p.table.count()
	return n
}

// Full reports whether a principal without a server now would be refused
// (503): MaxChildren servers live, every one of them busy or starting, or
// the pool closed.
func (p *Pool) Full() bool { return p.table.full() }

// Max returns MaxChildren, defaults applied.
func (p *Pool) Max() int { return p.o.MaxChildren }

// Handle hands m to the server of its principal, starting it first when
// there is none and m is a request (a notification for no server is
// dropped: there is nothing it could concern). A request holds the server
// (it is not idle) until its exchange is over.
func (p *Pool) Handle(ctx context.Context, m frame.Message) error {
	principal := PrincipalOf(ctx)
	e, err := p.checkout(principal, m.ID(), m.Kind() == frame.Request)
	if e == nil || err != nil {
		return err
	}
	select {
	case <-e.ready: // started: the case of every request but the first few
	default:
		select {
		case <-e.ready:
		case <-ctx.Done():
			p.release(e)
			return ctx.Err()
		}
	}
	if e.err != nil {
		p.release(e)
		return Refuse(http.StatusBadGateway, m.ID(), frame.CodeInternalError, "the server could not start: "+e.err.Error())
	}
	x := ExchangeOf(ctx)
	if x != nil && m.Kind() == frame.Request {
		defer x.OnDone(func([]frame.Message) { p.release(e) })
	} else {
		defer p.release(e)
	}
	return e.b.Handle(ctx, m)
}

// checkout returns principal's entry, with one more message in flight on
// it. When there is none it starts its server if start (for a request),
// else returns nil (a notification for no server is dropped). At
// MaxChildren the server idle the longest is closed to make room.
func (p *Pool) checkout(principal string, id frame.ID, start bool) (*poolEntry, error) {
	for {
		l, err := p.table.checkout(principal)
		switch {
		case err != nil:
			return nil, Refuse(http.StatusServiceUnavailable, id, frame.CodeInternalError, "the gateway is shutting down")
		case l != nil:
			return l.v, nil
		case !start:
			return nil, nil
		}
		e, err := p.add(principal, id)
		if !errors.Is(err, errTableTaken) {
			return e, err
		}
		// Another request started one meanwhile: join it.
	}
}

// add starts principal's server, or returns the refusal (errTableTaken
// when another request started one first).
func (p *Pool) add(principal string, id frame.ID) (*poolEntry, error) {
	e := &poolEntry{principal: principal, ready: make(chan struct{})}
	l, evicted, err := p.table.reserve(principal, e)
	switch {
	case errors.Is(err, errTableTaken):
		return nil, err
	case errors.Is(err, errTableClosed):
		return nil, Refuse(http.StatusServiceUnavailable, id, frame.CodeInternalError, "the gateway is shutting down")
	case errors.Is(err, errTableFull):
		p.log.Warn("a client was refused: every pooled server is busy; raise --max-modern-children", "max", p.o.MaxChildren)
		return nil, Refuse(http.StatusServiceUnavailable, id, frame.CodeInternalError,
			fmt.Sprintf("all %d server processes are busy serving other users; try again later", p.o.MaxChildren))
	}
	e.lease = l
	if evicted != nil {
		p.log.Debug("closing a pooled server", "why", "evicted to make room")
		go func() {
			defer p.table.done()
			p.closeBackend(evicted.v)
		}()
	}
	p.table.spawn(func() { p.start(e) })
	return e, nil
}

// start starts e's server and watches it until it ends.
func (p *Pool) start(e *poolEntry) {
	b, err := p.o.Start(context.Background(), e.principal)
	e.b, e.err = b, err
	if err != nil {
		p.table.remove(e.lease)
		// Logged before the requests waiting are told: the log says it
		// first.
		p.log.Warn("a server process could not start", "err", err)
		close(e.ready)
		return
	}
	started := p.table.start(e.lease)
	close(e.ready)
	if !started {
		// Closed meanwhile: Close closes it (it waits for ready).
		return
	}
	<-b.Done()
	p.table.remove(e.lease)
}

// closeEntry closes e's server in the background.
func (p *Pool) closeEntry(e *poolEntry, why string) {
	p.log.Debug("closing a pooled server", "why", why)
	p.table.spawn(func() { p.closeBackend(e) })
}

// closeBackend closes e's server, given 30 seconds.
func (p *Pool) closeBackend(e *poolEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.b.Close(ctx)
}

// release ends one request's hold on e; the last one arms the idle timer.
func (p *Pool) release(e *poolEntry) { p.table.release(e.lease) }

// Close closes every server and returns once they are gone, or ctx ends
// (then they are being killed). Requests after it get 503.
func (p *Pool) Close(ctx context.Context) error {
	return p.table.Close(ctx, func(ctx context.Context, l *idleEntry[*poolEntry], _ bool) error {
		e := l.v
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil
		}
		if e.b == nil {
			return nil
		}
		return e.b.Close(ctx)
	})
}
