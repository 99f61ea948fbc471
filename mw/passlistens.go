package mw

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// PassListensOptions configures [PassListens].
type PassListensOptions struct {
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// PassListens returns the stage that follows the subscriptions/listen
// requests passed on to a server that serves them itself (serve's dual-era
// child, which has its own 2026-07-28 face), and the handle that ends them
// gracefully when the gateway shuts down, as [ServeListen]'s handle does
// for the listens it serves: a listen otherwise lasts until its client
// goes, and would hold a draining gateway for its whole drain timeout.
//
// It sits inside [ModernRouter] (see the package documentation): the ids it
// sees are the router's minted ones, and it answers by sending client-bound,
// as the router's other inner stages do. The Middleware may be built into
// any number of chains (one per child); the handle covers them all.
//
// A server-bound subscriptions/listen request (id L) is followed from the
// moment it passes until its response passes client-bound, a server-bound
// notifications/cancelled names L (the client went), or the child's
// connection ([ConnOf] the request's context) ends. Every message passes
// untouched. Once the handle is closed, a new listen is refused with
// [Refuse] (503, -32603) before the server sees it.
//
// [PassedListens.Close] ends each listen followed: the final frame
// {"jsonrpc":"2.0","id":L,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":L}}}
// goes client-bound (the router restores the client's id and ends the
// answer), then notifications/cancelled for L server-bound, so that the
// server stops; whatever it still sends for L is dropped by the router.
func PassListens(o PassListensOptions) (Middleware, *PassedListens) {
	ctl := &PassedListens{stages: make(map[*passListens]struct{})}
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		st := &passListens{next: next, log: log, ctl: ctl, live: make(map[frame.ID]struct{})}
		return Duplex{ToServer: HandlerFunc(st.toServer), ToClient: HandlerFunc(st.toClient)}
	}, ctl
}

// PassedListens is the handle of the listens a [PassListens] follows, on
// every child its Middleware was built for.
type PassedListens struct {
	mu     sync.Mutex
	closed bool
	stages map[*passListens]struct{} // those with a child that lasts
}

// Close ends every listen followed gracefully (see [PassListens]) and has
// later ones refused. The final frames are handed on before it returns;
// ctx bounds the sends.
func (p *PassedListens) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	stages := make([]*passListens, 0, len(p.stages))
	for st := range p.stages {
		stages = append(stages, st)
	}
	p.mu.Unlock()
	for _, st := range stages {
		st.endAll(ctx)
	}
	return ctx.Err()
}

// passListens is one PassListens stage: the listens of one child.
type passListens struct {
	next Duplex
	log  *slog.Logger
	ctl  *PassedListens

	mu      sync.Mutex
	conn    *Conn // the child's, from its first listen
	watched bool  // conn.OnClose is set
	live    map[frame.ID]struct{}
	// n is len(live), read without the lock: with no listen followed (the
	// usual case) the child's responses pass without taking it.
	n atomic.Int32
}

func (st *passListens) toServer(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Request:
		if m.Method() == listenMethod {
			return st.pass(ctx, m)
		}
	case frame.Notification:
		if m.Method() == cancelMethod {
			if id, ok := cancelledRequestID(m); ok {
				st.forget(id)
			}
		}
	}
	return st.next.ToServer.Handle(ctx, m)
}

// pass follows the listen m and hands it on, or refuses it once the
// handle is closed.
func (st *passListens) pass(ctx context.Context, m frame.Message) error {
	id := m.ID()
	conn := ConnOf(ctx)
	st.ctl.mu.Lock()
	if st.ctl.closed {
		st.ctl.mu.Unlock()
		return Refuse(503, id, frame.CodeInternalError, "the gateway is shutting down")
	}
	st.ctl.stages[st] = struct{}{}
	st.mu.Lock()
	st.live[id] = struct{}{}
	st.n.Store(int32(len(st.live)))
	watch := conn != nil && !st.watched
	if watch {
		st.conn, st.watched = conn, true
	}
	st.mu.Unlock()
	st.ctl.mu.Unlock()
	if watch {
		// Outside the locks: a Conn closed already runs childGone at once.
		conn.OnClose(st.childGone)
	}
	if err := st.next.ToServer.Handle(ctx, m); err != nil {
		st.forget(id)
		return err
	}
	return nil
}

func (st *passListens) toClient(ctx context.Context, m frame.Message) error {
	if m.Kind().IsResponse() {
		st.forget(m.ID())
	}
	return st.next.ToClient.Handle(ctx, m)
}

// forget stops following the listen id; it reports whether it was
// followed.
func (st *passListens) forget(id frame.ID) bool {
	if st.n.Load() == 0 {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.live[id]; !ok {
		return false
	}
	delete(st.live, id)
	st.n.Store(int32(len(st.live)))
	return true
}

// childGone forgets the child's listens (the router answers them) and
// the stage.
func (st *passListens) childGone(error) {
	st.ctl.mu.Lock()
	delete(st.ctl.stages, st)
	st.ctl.mu.Unlock()
	st.mu.Lock()
	clear(st.live)
	st.n.Store(0)
	st.mu.Unlock()
}

// endAll ends every listen followed, gracefully.
func (st *passListens) endAll(ctx context.Context) {
	st.mu.Lock()
	ids := make([]frame.ID, 0, len(st.live))
	for id := range st.live {
		ids = append(ids, id)
	}
	clear(st.live)
	st.n.Store(0)
	conn := st.conn
	st.mu.Unlock()
	sctx := context.WithoutCancel(ctx)
	if conn != nil {
		sctx = WithConn(sctx, conn)
	}
	for _, id := range ids {
		if err := st.next.ToClient.Handle(ctx, listenFinal(id)); err != nil {
			st.log.Debug("could not end a listen", "listen", string(id), "err", err)
		}
		if err := st.next.ToServer.Handle(sctx, cancelNotification(id, "the gateway is shutting down")); err != nil {
			st.log.Debug("could not cancel a listen on the server", "listen", string(id), "err", err)
		}
	}
}
