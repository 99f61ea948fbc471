package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
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
	// busy gets 503; an idle one is reaped to make room.
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
// idle for IdleTTL is closed; at most MaxChildren live at once. A Pool is a
// [Handler]: every message handed to it goes to the principal's server. It
// is safe for concurrent use.
type Pool struct {
	o   PoolOptions
	log *slog.Logger

	mu      sync.Mutex
	entries map[string]*poolEntry
	closed  bool
	wg      sync.WaitGroup // the watchers and reapers of entries
}

// poolEntry is one principal's server.
type poolEntry struct {
	principal string
	ready     chan struct{} // closed once started (b or err set)
	b         Backend
	err       error
	inUse     int    // requests in flight (a checkout each)
	gen       uint64 // bumped on every checkout: an idle timer of an older one is stale
	stopIdle  func() bool
	gone      bool // removed from the pool
}

// NewPool returns an empty pool.
func NewPool(o PoolOptions) *Pool {
	if o.MaxChildren <= 0 {
		o.MaxChildren = DefaultMaxPooledChildren
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Pool{o: o, log: loggerOrDiscard(o.Logger), entries: make(map[string]*poolEntry)}
}

// Len returns the number of servers alive or starting.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Full reports whether a principal without a server now would be refused
// (503): MaxChildren servers live, every one of them busy or starting, or
// the pool closed.
func (p *Pool) Full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return true
	}
	if len(p.entries) < p.o.MaxChildren {
		return false
	}
	for _, e := range p.entries {
		select {
		case <-e.ready:
			if e.inUse == 0 && e.b != nil {
				return false // it would be evicted to make room
			}
		default:
		}
	}
	return true
}

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
	case <-e.ready:
	case <-ctx.Done():
		p.release(e)
		return ctx.Err()
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
// else returns nil (a notification for no server is dropped).
func (p *Pool) checkout(principal string, id frame.ID, start bool) (*poolEntry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, Refuse(http.StatusServiceUnavailable, id, frame.CodeInternalError, "the gateway is shutting down")
	}
	if e := p.entries[principal]; e != nil {
		e.inUse++
		e.gen++
		if e.stopIdle != nil {
			e.stopIdle()
			e.stopIdle = nil
		}
		return e, nil
	}
	if !start {
		return nil, nil
	}
	if len(p.entries) >= p.o.MaxChildren && !p.evictIdleLocked() {
		p.log.Warn("a client was refused: every pooled server is busy; raise --max-modern-children", "max", p.o.MaxChildren)
		return nil, Refuse(http.StatusServiceUnavailable, id, frame.CodeInternalError,
			fmt.Sprintf("all %d server processes are busy serving other users; try again later", p.o.MaxChildren))
	}
	e := &poolEntry{principal: principal, ready: make(chan struct{}), inUse: 1, gen: 1}
	p.entries[principal] = e
	p.wg.Add(1)
	go p.start(e)
	return e, nil
}

// start starts e's server and watches it until it ends.
func (p *Pool) start(e *poolEntry) {
	defer p.wg.Done()
	b, err := p.o.Start(context.Background(), e.principal)
	p.mu.Lock()
	e.b, e.err = b, err
	if err != nil {
		p.removeLocked(e)
	}
	p.mu.Unlock()
	if err != nil {
		// Logged before the requests waiting are told: the log says it
		// first.
		p.log.Warn("a server process could not start", "err", err)
		close(e.ready)
		return
	}
	close(e.ready)
	<-b.Done()
	p.mu.Lock()
	p.removeLocked(e)
	p.mu.Unlock()
}

// removeLocked takes e out of the pool, if it is still in.
func (p *Pool) removeLocked(e *poolEntry) {
	if e.gone {
		return
	}
	e.gone = true
	if p.entries[e.principal] == e {
		delete(p.entries, e.principal)
	}
	if e.stopIdle != nil {
		e.stopIdle()
		e.stopIdle = nil
	}
}

// evictIdleLocked closes one server with no request in flight, to make
// room; it reports whether there was one.
func (p *Pool) evictIdleLocked() bool {
	for _, e := range p.entries {
		select {
		case <-e.ready:
		default:
			continue // starting
		}
		if e.inUse == 0 && e.b != nil {
			p.removeLocked(e)
			p.closeEntry(e, "evicted to make room")
			return true
		}
	}
	return false
}

// closeEntry closes e's server in the background.
func (p *Pool) closeEntry(e *poolEntry, why string) {
	p.log.Debug("closing a pooled server", "why", why)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.b.Close(ctx)
	}()
}

// release ends one request's hold on e; the last one arms the idle timer.
func (p *Pool) release(e *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.inUse--
	if e.inUse > 0 || e.gone || p.o.IdleTTL <= 0 || e.b == nil {
		return
	}
	gen := e.gen
	e.stopIdle = p.o.AfterFunc(p.o.IdleTTL, func() { p.idle(e, gen) })
}

// idle reaps e if nothing used it since the timer of generation gen was
// armed.
func (p *Pool) idle(e *poolEntry, gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.gone || e.inUse > 0 || e.gen != gen || p.closed {
		return
	}
	p.removeLocked(e)
	p.closeEntry(e, "idle")
}

// Close closes every server and returns once they are gone, or ctx ends
// (then they are being killed). Requests after it get 503.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	entries := make([]*poolEntry, 0, len(p.entries))
	for _, e := range p.entries {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return
			}
			if e.b == nil {
				return
			}
			if err := e.b.Close(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}
