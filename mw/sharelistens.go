package mw

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// DefaultMaxListens is how many subscriptions/listen streams serve keeps
// open on one child at once, its clients' together, unless told otherwise
// ([ShareListensOptions.MaxListens], [ServeListenOptions.MaxListens]).
const DefaultMaxListens = 1024

// shareListenStage names the ids of the listens [ShareListens] opens on
// its child: "mcp-stdio/shared-listen/<random>/<n>".
const shareListenStage = "shared-listen"

// sharedListenPrefix starts those ids, as JSON strings.
const sharedListenPrefix = MintedIDPrefix + shareListenStage + "/"

// Limits of [ShareListens].
const (
	// MaxParkedListens bounds the listens ShareListens keeps open on one
	// child for no client (see [ShareListens]); one more, and it ends
	// every listen it has on the child and opens them again.
	MaxParkedListens = 16
	// ListenDrainWait bounds how long ShareListens waits for the child to
	// end the listens it cancelled before it sends the child another.
	ListenDrainWait = 2 * time.Second
)

// ShareListensOptions configures [ShareListens].
type ShareListensOptions struct {
	// MaxListens bounds the listens served on one child at once, its
	// clients' together; 0 means DefaultMaxListens.
	MaxListens int
	// Rand is read once per child for the random part of the ids of the
	// listens the stage opens on it (see [IDMinter.Randomize]); nil means
	// crypto/rand.
	Rand io.Reader
	// AfterFunc runs f once d has passed, unless the returned stop is
	// called first; it bounds the wait for the child's ends of the
	// listens the stage cancelled (ListenDrainWait). nil means
	// time.AfterFunc. For tests.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ShareListens returns the stage that serves 2026-07-28 clients'
// subscriptions/listen requests from a server that serves listens itself
// (serve's dual-era child), opening one listen on the server for all its
// clients' listens, and the handle that ends the listens gracefully when
// the gateway shuts down.
//
// It sits inside [ModernRouter] (see the package documentation): the ids
// it sees are the router's minted ones, unique on the server, and it
// answers by sending client-bound, as the router's other inner stages do.
// The Middleware may be built into any number of chains (one per child);
// each build serves its own child, and the handle covers them all.
//
// Why one. A server may keep listens per connection rather than per
// listen, and the stage's listens all come over one connection: the Go
// SDK's server keeps one listen per kind of notification on a connection
// (a later listen asking for a kind takes it from an earlier one), and
// the end of any listen there drops every listen of the connection. So
// the stage keeps, for each _meta protocol version, one listen on the
// server (the current one), asking for the union of what its clients'
// listens ask for, and never ends a listen on the server while it has
// another open there, unless every client listen has gone.
//
// Listen. A server-bound subscriptions/listen (id L) is never passed on
// as it is. A params.notifications that is not an object gets -32602. Its
// members whose value is false or null are not asked for. A listen that
// asks for nothing beyond the current listen (each member with the same
// JSON value; each URI of resourceSubscriptions among the current one's)
// joins it: it is acknowledged at once when the server has acknowledged
// the current listen. Otherwise the server is sent a new listen asking
// for the union of every client listen of that protocol version, under
// an id the stage mints, "mcp-stdio/shared-listen/<random>/<n>": the
// request of the listen that made it, without its _meta progressToken (a
// listen carries no progress), with params.notifications set to the
// union (kept byte for byte when it is the listen's own). Listens already
// acknowledged keep getting the previous listen's events until the new
// one's acknowledgement, then get the new one's (an event the server
// sends on both in between may come twice); the previous listen stays
// open on the server, parked: its later frames are dropped. A listen
// beyond MaxListens on the child (its clients' together), after the child
// ended, or once the handle is closed, is refused with [Refuse] (503 with
// Retry-After, -32603) before anything reaches the server. Handle returns
// once the listen is registered; its frames follow, client-bound.
//
// Fan-out. Each client listen gets, under its own id L set at
// params._meta["io.modelcontextprotocol/subscriptionId"] and every other
// byte kept: its acknowledgement first, which is the server's when the
// listen asked for what the server's listen asked for, and otherwise the
// server's with params.notifications cut to the members (and URIs) the
// listen asked for; then the server's events it asked for:
// notifications/tools/list_changed for toolsListChanged (prompts and
// resources alike), notifications/resources/updated for a URI among its
// resourceSubscriptions or under one ("<uri>/…"), and any other method
// when it asked for a member the stage does not know. Each copy waits in
// that listen's queue (at most ListenQueueSize) for a goroutine that hands
// it client-bound, so a slow client never holds the server's reader or
// the other clients; one whose queue is full is cut (its exchange ends,
// [Exchange.Cut]). The server's response to its current listen (the
// graceful end, or an error) ends every client listen of it with that
// response under L (result._meta subscriptionId rewritten the same way) —
// except an error before the acknowledgement of a listen opened to widen
// the union: it ends only the listens not yet acknowledged, and the others
// are served by a new listen with the union of theirs (once; a second such
// error ends them too). Frames for a listen of the stage that has ended,
// or that is parked, are dropped.
//
// Endings. The client: a server-bound notifications/cancelled naming L
// (the router sends it when the client goes) releases the listen and is
// swallowed. When the last client listen of a protocol version goes while
// others remain, its listen on the server is parked; when the last on the
// child goes, the server is sent notifications/cancelled for each of its
// listens, and a later listen is sent to the server only once it has
// answered those (or ListenDrainWait has passed). Beyond MaxParkedListens
// parked listens on a child, every listen on it is cancelled so, and each
// protocol version's is opened again (its clients keep their streams;
// events in between are lost). The child: when its connection ([ConnOf]
// the first listen's context) ends, the listens are forgotten (the router
// answers them). The gateway: [SharedListens.Close] ends every listen with
// the final frame
// {"jsonrpc":"2.0","id":L,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":L}}}
// after what is queued for it, and cancels the server's listens.
// Every goroutine of the stage ends with its listen.
func ShareListens(o ShareListensOptions) (Middleware, *SharedListens) {
	if o.MaxListens <= 0 {
		o.MaxListens = DefaultMaxListens
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	ctl := &SharedListens{stages: make(map[*shareListens]struct{})}
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		st := &shareListens{
			next:    next,
			log:     log,
			ctl:     ctl,
			max:     o.MaxListens,
			after:   o.AfterFunc,
			chans:   make(map[string]*listenChannel),
			ups:     make(map[frame.ID]*upListen),
			members: make(map[frame.ID]*sharedListen),
		}
		if err := st.ids.Randomize(o.Rand); err != nil {
			log.Error("the ids minted for this server are a plain counter", "err", err)
		}
		return Duplex{ToServer: HandlerFunc(st.toServer), ToClient: HandlerFunc(st.toClient)}
	}, ctl
}

// SharedListens is the handle of the listens a [ShareListens] serves, on
// every child its Middleware was built for.
type SharedListens struct {
	mu     sync.Mutex
	closed bool
	stages map[*shareListens]struct{} // those with listens on a child that lasts
}

// Close ends every listen gracefully (see [ShareListens]) and has later
// ones refused. It returns once every final frame has been handed on, or
// when ctx ends, returning its error.
func (p *SharedListens) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	stages := make([]*shareListens, 0, len(p.stages))
	for st := range p.stages {
		stages = append(stages, st)
	}
	p.mu.Unlock()
	var ending []*sharedListen
	for _, st := range stages {
		ending = append(ending, st.endAll()...)
	}
	for _, s := range ending {
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// shareListens is one ShareListens stage: the listens of one child.
type shareListens struct {
	next  Duplex
	log   *slog.Logger
	ctl   *SharedListens
	max   int
	ids   IDMinter
	after func(time.Duration, func()) func() bool

	sendMu sync.Mutex // held while the outbox is sent, so that it goes in order

	mu        sync.Mutex
	conn      *Conn                      // the child's, from its first listen: watched
	gone      bool                       // the child ended
	chans     map[string]*listenChannel  // by _meta protocol version (raw JSON)
	ups       map[frame.ID]*upListen     // the listens on the child, until they end or are given up on
	parked    []*upListen                // open on the child, current for no one; oldest first
	members   map[frame.ID]*sharedListen // by L
	recent    []frame.ID                 // listens ended here, whose router cancel may follow
	draining  int                        // cancelled listens on the child whose end has not come
	drainStop func() bool                // stops the timer bounding the wait for them; nil when none runs
	drainGen  int                        // counts the timers, so that a stale one does nothing
	unsent    []*upListen                // listens waiting for the draining ones to end, in order
	outbox    []upSend                   // what goes to the child next, in order
}

// listenChannel is the client listens of one protocol version and their
// current listen on the server.
type listenChannel struct {
	version string
	cur     *upListen // nil once it ended
	members []*sharedListen
}

// upState is where a listen of the stage on the server is.
type upState int

const (
	upUnsent   upState = iota // waiting for cancelled listens to end
	upOpen                    // sent: its channel's current listen
	upParked                  // sent, replaced or without clients: left open
	upDraining                // cancelled: its end has not come
)

// upListen is one listen of the stage on the server.
type upListen struct {
	id     frame.ID
	ch     *listenChannel // the channel it was opened for
	filter listenFilter
	req    frame.Message   // the request, under id
	ctx    context.Context // the child's connection, for sending
	state  upState
	retry  bool // opened again after a widening listen failed
	ack    frame.Message
	acked  bool
	to     []*sharedListen // the client listens its frames go to
}

// upSend is a message of the stage to the server; u is the listen it
// opens, if it does.
type upSend struct {
	ctx context.Context
	m   frame.Message
	u   *upListen
}

// sharedListen is one client's listen.
type sharedListen struct {
	id     frame.ID
	ch     *listenChannel // guarded by the stage's mu; nil once it left
	filter listenFilter
	acked  bool            // its acknowledgement is queued
	ctx    context.Context // the listen request's: its exchange
	q      fanQueue
	dctx   context.Context
	stop   context.CancelFunc
	done   chan struct{} // closed when nothing delivers for it any more
}

func (st *shareListens) toServer(ctx context.Context, m frame.Message) error {
	switch {
	case m.Kind() == frame.Request && m.Method() == listenMethod:
		return st.listen(ctx, m)
	case m.Kind() == frame.Notification && m.Method() == cancelMethod:
		if id, ok := cancelledRequestID(m); ok && st.cancelled(id) {
			return nil
		}
	}
	return st.next.ToServer.Handle(ctx, m)
}

// listen serves a subscriptions/listen.
func (st *shareListens) listen(ctx context.Context, m frame.Message) error {
	id := m.ID()
	req := m.Get("params.notifications")
	if !req.IsObject() {
		return st.next.ToClient.Handle(ctx, frame.ErrorResponse(id, frame.CodeInvalidParams, listenMethod+": params.notifications must be an object"))
	}
	s := &sharedListen{id: id, ctx: ctx, filter: parseFilter(req), done: make(chan struct{})}
	s.q.init()
	s.dctx, s.stop = context.WithCancel(ctx)

	st.ctl.mu.Lock()
	st.mu.Lock()
	var refusal error
	switch {
	case st.ctl.closed:
		refusal = Refuse(503, id, frame.CodeInternalError, "the gateway is shutting down")
	case st.gone:
		refusal = Refuse(503, id, frame.CodeInternalError, "the server process has exited; send the request again")
	case len(st.members) >= st.max:
		refusal = Refuse(503, id, frame.CodeInternalError,
			fmt.Sprintf("this server already has %d listeners, the most the gateway allows (--max-listens); try again later", st.max))
		st.log.Warn("refused a listen: the server has as many listeners as it may; raise --max-listens", "listen", string(id), "max", st.max)
	}
	if refusal != nil {
		st.mu.Unlock()
		st.ctl.mu.Unlock()
		s.stop()
		return refusal
	}
	st.ctl.stages[st] = struct{}{}
	watch := false
	if st.conn == nil {
		st.conn = ConnOf(ctx)
		watch = st.conn != nil
	}
	version := m.Get(mcp.ParamsProtocolVersion).Raw
	ch := st.chans[version]
	if ch == nil {
		ch = &listenChannel{version: version}
		st.chans[version] = ch
	}
	ch.members = append(ch.members, s)
	s.ch = ch
	st.members[id] = s
	if u := ch.cur; u != nil && u.filter.covers(s.filter) {
		u.to = append(u.to, s)
		if u.acked {
			s.acked = true
			s.q.push(ackFor(u, s), 0)
		}
	} else {
		st.openLocked(ch, m, ctx, false)
	}
	st.mu.Unlock()
	st.ctl.mu.Unlock()
	if watch {
		st.conn.OnClose(st.childGone) // outside the locks: a Conn closed already runs it at once
	}
	go st.deliver(s)
	st.flush()
	return nil
}

// openLocked makes a new current listen for ch, asking for the union of
// its members' filters, from the request m (its _meta) on the connection
// of ctx; the current one, if sent, is parked, still serving the
// members acknowledged until the new one is. st.mu is held.
func (st *shareListens) openLocked(ch *listenChannel, m frame.Message, ctx context.Context, retry bool) {
	filter := unionOf(ch.members)
	old := ch.cur
	if old != nil && old.state == upUnsent {
		// Not sent yet: it asks for more.
		old.filter = filter
		old.req = upRequest(old.req, old.id, filter)
		old.to = slices.Clone(ch.members)
		return
	}
	u := &upListen{
		id:     st.ids.Mint(shareListenStage),
		ch:     ch,
		filter: filter,
		ctx:    st.upCtx(ctx),
		retry:  retry,
		to:     slices.Clone(ch.members),
	}
	u.req = upRequest(m, u.id, filter)
	st.ups[u.id] = u
	ch.cur = u
	if old != nil {
		old.to = slices.DeleteFunc(old.to, func(s *sharedListen) bool { return !s.acked })
		st.parkLocked(old)
	}
	if len(st.parked) > MaxParkedListens {
		st.log.Debug("too many listens parked on the server: cancelling every listen there, to open them again", "parked", len(st.parked))
		st.reopenAllLocked()
		return
	}
	st.queueLocked(u)
}

// parkLocked leaves u open on the server, current for no one. st.mu is
// held.
func (st *shareListens) parkLocked(u *upListen) {
	if u.state == upUnsent {
		st.forgetLocked(u)
		return
	}
	u.state = upParked
	st.parked = append(st.parked, u)
}

// forgetLocked forgets u: frames for it are dropped from now on. st.mu is
// held.
func (st *shareListens) forgetLocked(u *upListen) {
	if st.ups[u.id] == u {
		delete(st.ups, u.id)
	}
	st.unsent = slices.DeleteFunc(st.unsent, func(o *upListen) bool { return o == u })
	st.parked = slices.DeleteFunc(st.parked, func(o *upListen) bool { return o == u })
	if u.ch != nil && u.ch.cur == u {
		u.ch.cur = nil
	}
}

// queueLocked sends u next, or once the cancelled listens have ended.
// st.mu is held.
func (st *shareListens) queueLocked(u *upListen) {
	if st.draining == 0 {
		u.state = upOpen
		st.outbox = append(st.outbox, upSend{u.ctx, u.req, u})
		return
	}
	u.state = upUnsent
	st.unsent = append(st.unsent, u)
	if st.drainStop == nil {
		st.drainGen++
		gen := st.drainGen
		st.drainStop = st.after(ListenDrainWait, func() { st.drainExpired(gen) })
	}
}

// cancelAllLocked cancels every listen of the stage on the server (the
// unsent ones are forgotten); their ends are awaited before another is
// sent. st.mu is held.
func (st *shareListens) cancelAllLocked(why string) {
	for _, u := range st.ups {
		switch u.state {
		case upUnsent:
			st.forgetLocked(u)
		case upOpen, upParked:
			u.state = upDraining
			u.to = nil
			st.draining++
			st.outbox = append(st.outbox, upSend{u.ctx, cancelNotification(u.id, why), nil})
			if u.ch != nil && u.ch.cur == u {
				u.ch.cur = nil
			}
		}
	}
	st.parked = nil
}

// reopenAllLocked cancels every listen of the stage on the server and has
// each channel with clients open one again once they have ended. st.mu is
// held.
func (st *shareListens) reopenAllLocked() {
	tmpl := make(map[*listenChannel]*upListen, len(st.chans))
	for _, ch := range st.chans {
		tmpl[ch] = ch.cur
	}
	st.cancelAllLocked("mcp-stdio is opening its listens again")
	for _, ch := range st.chans {
		t := tmpl[ch]
		if t == nil || len(ch.members) == 0 {
			continue
		}
		u := &upListen{id: st.ids.Mint(shareListenStage), ch: ch, filter: unionOf(ch.members), ctx: t.ctx, to: slices.Clone(ch.members)}
		u.req = upRequest(t.req, u.id, u.filter)
		st.ups[u.id] = u
		ch.cur = u
		st.queueLocked(u)
	}
}

// drainExpired gives up waiting for the cancelled listens to end and
// sends what waited for them.
func (st *shareListens) drainExpired(gen int) {
	st.mu.Lock()
	if gen != st.drainGen || st.drainStop == nil {
		st.mu.Unlock()
		return
	}
	n := st.draining
	for id, u := range st.ups {
		if u.state == upDraining {
			delete(st.ups, id)
		}
	}
	st.drainedLocked()
	st.mu.Unlock()
	st.log.Debug("the server did not end cancelled listens in time; sending the next listen anyway", "listens", n, "waited", ListenDrainWait)
	st.flush()
}

// drainedLocked notes that no cancelled listen is awaited any more and
// readies the ones that waited. st.mu is held.
func (st *shareListens) drainedLocked() {
	st.draining = 0
	if st.drainStop != nil {
		st.drainStop()
		st.drainStop = nil
	}
	st.drainGen++
	for _, u := range st.unsent {
		u.state = upOpen
		st.outbox = append(st.outbox, upSend{u.ctx, u.req, u})
	}
	st.unsent = nil
}

// flush sends the outbox to the server, in order.
func (st *shareListens) flush() {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	st.mu.Lock()
	out := st.outbox
	st.outbox = nil
	st.mu.Unlock()
	for _, x := range out {
		err := st.next.ToServer.Handle(x.ctx, x.m)
		switch {
		case err == nil:
		case x.u != nil:
			st.log.Warn("the server could not take a listen", "err", err)
			st.upstreamEnded(frame.ErrorResponse(x.u.id, frame.CodeInternalError, "the server could not take the listen: "+err.Error()))
		default:
			st.log.Debug("could not cancel a listen on the server", "err", err)
		}
	}
}

// upCtx is the context of the stage's own messages to the server: the
// connection of ctx, no exchange, no end.
func (st *shareListens) upCtx(ctx context.Context) context.Context {
	return WithExchange(context.WithoutCancel(ctx), nil)
}

// upRequest returns the listen request m under id, without a progress
// token, asking for f (m's own params.notifications kept when it asks
// for the same).
func upRequest(m frame.Message, id frame.ID, f listenFilter) frame.Message {
	up, err := m.WithID(id)
	if err != nil {
		return m
	}
	if up.Get(requestProgressTokenPath).Exists() {
		if d, err := up.Delete(requestProgressTokenPath); err == nil {
			up = d
		}
	}
	if own := parseFilter(up.Get("params.notifications")); !own.equal(f) {
		if s, err := up.Set("params.notifications", []byte(f.json())); err == nil {
			up = s
		}
	}
	return up
}

// stamp returns m with id set at path; m itself when it cannot be set
// (it is then delivered as it is, and the router drops it).
func stamp(m frame.Message, path string, id frame.ID) frame.Message {
	out, err := m.Set(path, id.Raw())
	if err != nil {
		return m
	}
	return out
}

// ackFor returns u's acknowledgement for s, under s's id.
func ackFor(u *upListen, s *sharedListen) frame.Message {
	ack := u.ack
	if !s.filter.equal(u.filter) {
		if cut, err := ack.Set("params.notifications", []byte(s.filter.honoured(ack.Get("params.notifications")))); err == nil {
			ack = cut
		}
	}
	return stamp(ack, mcp.ParamsSubscriptionID, s.id)
}

func (st *shareListens) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Notification:
		if sid := m.Get(mcp.ParamsSubscriptionID); sid.Exists() && strings.HasPrefix(sid.Raw, sharedListenPrefix) {
			st.upstreamFrame(frame.ID(sid.Raw), m)
			return nil
		}
	case frame.Result, frame.Error:
		if strings.HasPrefix(string(m.ID()), sharedListenPrefix) {
			st.upstreamEnded(m)
			return nil
		}
	}
	return st.next.ToClient.Handle(ctx, m)
}

// upstreamFrame fans a frame of the server's listen up out to the client
// listens it serves.
func (st *shareListens) upstreamFrame(up frame.ID, m frame.Message) {
	var over []*sharedListen
	st.mu.Lock()
	u := st.ups[up]
	if u == nil || u.state == upDraining {
		st.mu.Unlock()
		st.log.Debug("dropped a frame of a listen that has ended", "method", m.Method())
		return
	}
	if m.Method() == listenAckMethod {
		if u.state == upOpen && !u.acked {
			u.ack, u.acked = m, true
			for _, s := range u.to {
				if !s.acked {
					s.acked = true
					s.q.push(ackFor(u, s), 0)
				}
			}
			for _, p := range st.parked {
				if p.ch == u.ch {
					p.to = nil
				}
			}
		}
		st.mu.Unlock()
		return
	}
	for _, s := range u.to {
		if !s.acked || !s.filter.wants(m) {
			continue
		}
		if !s.q.push(stamp(m, mcp.ParamsSubscriptionID, s.id), ListenQueueSize) {
			over = append(over, s)
		}
	}
	st.mu.Unlock()
	for _, s := range over {
		st.log.Warn("ended a listen whose client does not keep up", "listen", string(s.id), "queued", ListenQueueSize)
		st.drop(s, true)
	}
}

// upstreamEnded takes the server's response resp to a listen of the
// stage.
func (st *shareListens) upstreamEnded(resp frame.Message) {
	st.mu.Lock()
	u := st.ups[resp.ID()]
	if u == nil || u.state == upUnsent { // not sent: the child cannot have answered it
		st.mu.Unlock()
		return
	}
	delete(st.ups, u.id)
	switch u.state {
	case upDraining:
		st.draining--
		if st.draining == 0 {
			st.drainedLocked()
			st.mu.Unlock()
			go st.flush() // not on the server's reader: sending may wait for the server to read
			return
		}
		st.mu.Unlock()
		return
	case upParked:
		st.parked = slices.DeleteFunc(st.parked, func(o *upListen) bool { return o == u })
		st.mu.Unlock()
		st.log.Debug("the server ended a parked listen", "listen", string(u.id))
		return
	}
	ch := u.ch
	if ch.cur == u {
		ch.cur = nil
	}
	ending := u.to
	if resp.Kind() == frame.Error && !u.acked && !u.retry {
		// A listen opened to ask for more failed: the listens already
		// acknowledged are served again without what made it fail.
		var keep []*sharedListen
		ending, keep = nil, nil
		for _, s := range u.to {
			if s.acked {
				keep = append(keep, s)
			} else {
				ending = append(ending, s)
			}
		}
		if len(keep) > 0 {
			ch.members = keep
			st.openLocked(ch, u.req, u.ctx, true)
		}
	}
	for _, s := range ending {
		st.leaveLocked(s)
		st.rememberLocked(s.id)
		out, err := resp.WithID(s.id)
		if err != nil {
			out = frame.ErrorResponse(s.id, frame.CodeInternalError, "the server ended the listen")
		}
		if sid := out.Get(mcp.ResultSubscriptionID); sid.Exists() && frame.ID(sid.Raw) == u.id {
			out = stamp(out, mcp.ResultSubscriptionID, s.id)
		}
		s.q.push(out, 0)
	}
	st.mu.Unlock()
	go st.flush() // not on the server's reader: sending may wait for the server to read
}

// leaveLocked takes s out of the stage's books; when it was the last
// client listen of its protocol version, that version's listen on the
// server is parked, and when it was the last on the child, every listen
// of the stage there is cancelled. st.mu is held.
func (st *shareListens) leaveLocked(s *sharedListen) {
	if st.members[s.id] == s {
		delete(st.members, s.id)
	}
	ch := s.ch
	if ch == nil {
		return
	}
	s.ch = nil
	not := func(o *sharedListen) bool { return o == s }
	ch.members = slices.DeleteFunc(ch.members, not)
	for _, u := range st.ups {
		if u.ch == ch {
			u.to = slices.DeleteFunc(u.to, not)
		}
	}
	switch {
	case len(st.members) == 0:
		st.cancelAllLocked("no client listens any more")
		clear(st.chans)
	case len(ch.members) == 0:
		if st.chans[ch.version] == ch {
			delete(st.chans, ch.version)
		}
		if u := ch.cur; u != nil {
			ch.cur = nil
			u.to = nil
			st.parkLocked(u)
			if len(st.parked) > MaxParkedListens {
				st.log.Debug("too many listens parked on the server: cancelling every listen there, to open them again", "parked", len(st.parked))
				st.reopenAllLocked()
			}
		}
	}
}

// rememberLocked notes that the listen id ended here, so that the
// router's cancel for it is swallowed; the last 16 are kept. st.mu is
// held.
func (st *shareListens) rememberLocked(id frame.ID) {
	st.recent = append(st.recent, id)
	if len(st.recent) > maxGoneListens {
		st.recent = st.recent[1:]
	}
}

// deliver hands s's queued frames client-bound, in order, until a
// response (its last) or s's end.
func (st *shareListens) deliver(s *sharedListen) {
	defer close(s.done)
	for {
		select {
		case <-s.dctx.Done():
			return
		case <-s.q.wake:
		}
		for _, m := range s.q.take() {
			if err := st.next.ToClient.Handle(s.dctx, m); err != nil {
				if s.dctx.Err() == nil {
					st.log.Debug("a listen's client cannot be reached", "listen", string(s.id), "err", err)
				}
				st.drop(s, true)
				return
			}
			if m.Kind().IsResponse() {
				s.stop()
				return
			}
		}
	}
}

// cancelled takes the client's cancel of request id, reporting whether it
// named a listen of the stage.
func (st *shareListens) cancelled(id frame.ID) bool {
	st.mu.Lock()
	s := st.members[id]
	if s == nil {
		i := slices.Index(st.recent, id)
		if i >= 0 {
			st.recent = slices.Delete(st.recent, i, i+1)
		}
		st.mu.Unlock()
		return i >= 0
	}
	st.mu.Unlock()
	st.log.Debug("the client closed a listen", "listen", string(id))
	st.drop(s, false)
	return true
}

// drop ends s abruptly: it stops delivering, and its exchange is cut when
// cut.
func (st *shareListens) drop(s *sharedListen, cut bool) {
	st.mu.Lock()
	if cut && st.members[s.id] == s {
		st.rememberLocked(s.id)
	}
	st.leaveLocked(s)
	st.mu.Unlock()
	s.stop()
	if cut {
		if x := ExchangeOf(s.ctx); x != nil {
			x.Cut()
		}
	}
	st.flush()
}

// childGone forgets every listen: the child is gone, and the router
// answers the clients.
func (st *shareListens) childGone(error) {
	st.ctl.mu.Lock()
	delete(st.ctl.stages, st)
	st.ctl.mu.Unlock()
	st.mu.Lock()
	st.gone = true
	all := make([]*sharedListen, 0, len(st.members))
	for _, s := range st.members {
		all = append(all, s)
		s.ch = nil
	}
	st.resetLocked()
	st.mu.Unlock()
	for _, s := range all {
		s.stop()
	}
}

// resetLocked forgets every listen, the client's and the server's. st.mu
// is held.
func (st *shareListens) resetLocked() {
	clear(st.members)
	clear(st.chans)
	clear(st.ups)
	st.parked, st.unsent, st.outbox = nil, nil, nil
	st.draining = 0
	if st.drainStop != nil {
		st.drainStop()
		st.drainStop = nil
	}
	st.drainGen++
}

// endAll ends every listen gracefully, cancels the server's listens, and
// returns the listens ended.
func (st *shareListens) endAll() []*sharedListen {
	st.mu.Lock()
	var ending []*sharedListen
	for _, s := range st.members {
		s.ch = nil
		s.q.push(listenFinal(s.id), 0)
		ending = append(ending, s)
	}
	var cancels []upSend
	for _, u := range st.ups {
		if u.state == upOpen || u.state == upParked {
			cancels = append(cancels, upSend{u.ctx, cancelNotification(u.id, "the gateway is shutting down"), nil})
		}
	}
	st.resetLocked()
	st.outbox = cancels
	st.mu.Unlock()
	st.flush()
	return ending
}

// listenFilter is what a listen asks for: the members of its
// params.notifications, false and null ones aside.
type listenFilter struct {
	kinds []filterKind // other than an array resourceSubscriptions, in the request's order
	uris  []filterURI  // resourceSubscriptions' strings, each once
}

// filterKind is a member of a filter: its name, and its name and value as
// they were sent.
type filterKind struct{ name, key, value string }

// filterURI is a URI of resourceSubscriptions, and its JSON as sent.
type filterURI struct{ uri, raw string }

// Members of params.notifications the stage knows.
const (
	filterTools     = "toolsListChanged"
	filterPrompts   = "promptsListChanged"
	filterResources = "resourcesListChanged"
	filterURIs      = "resourceSubscriptions"
)

// parseFilter reads a params.notifications object.
func parseFilter(n gjson.Result) listenFilter {
	var f listenFilter
	n.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		switch {
		case v.Type == gjson.False || v.Type == gjson.Null:
		case name == filterURIs && v.IsArray():
			v.ForEach(func(_, e gjson.Result) bool {
				if e.Type == gjson.String && !slices.ContainsFunc(f.uris, func(u filterURI) bool { return u.uri == e.Str }) {
					f.uris = append(f.uris, filterURI{e.Str, e.Raw})
				}
				return true
			})
		default:
			f.kinds = slices.DeleteFunc(f.kinds, func(o filterKind) bool { return o.name == name })
			f.kinds = append(f.kinds, filterKind{name, k.Raw, v.Raw})
		}
		return true
	})
	return f
}

// kind returns the value f asks for name with, and whether it does.
func (f listenFilter) kind(name string) (string, bool) {
	for _, k := range f.kinds {
		if k.name == name {
			return k.value, true
		}
	}
	return "", false
}

// hasURI reports whether f asks for updates of uri.
func (f listenFilter) hasURI(uri string) bool {
	return slices.ContainsFunc(f.uris, func(u filterURI) bool { return u.uri == uri })
}

// covers reports whether f asks for everything g asks for.
func (f listenFilter) covers(g listenFilter) bool {
	for _, k := range g.kinds {
		if v, ok := f.kind(k.name); !ok || v != k.value {
			return false
		}
	}
	for _, u := range g.uris {
		if !f.hasURI(u.uri) {
			return false
		}
	}
	return true
}

// equal reports whether f and g ask for the same.
func (f listenFilter) equal(g listenFilter) bool { return f.covers(g) && g.covers(f) }

// unionOf returns a filter asking for what each listen asks for (for a
// member asked with different values, the last listen's).
func unionOf(ls []*sharedListen) listenFilter {
	var u listenFilter
	for _, s := range ls {
		for _, k := range s.filter.kinds {
			u.kinds = slices.DeleteFunc(u.kinds, func(o filterKind) bool { return o.name == k.name })
			u.kinds = append(u.kinds, k)
		}
		for _, r := range s.filter.uris {
			if !u.hasURI(r.uri) {
				u.uris = append(u.uris, r)
			}
		}
	}
	return u
}

// json returns f as a params.notifications object.
func (f listenFilter) json() string {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, k := range f.kinds {
		if k.name == filterURIs && len(f.uris) > 0 {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k.key + ":" + k.value)
	}
	if len(f.uris) > 0 {
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + filterURIs + `":[`)
		for i, u := range f.uris {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(u.raw)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// honoured returns the members of the server's acknowledged
// notifications (ack) that f asks for, as an object.
func (f listenFilter) honoured(ack gjson.Result) string {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	add := func(k, v string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k + ":" + v)
	}
	ack.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		switch {
		case name == filterURIs && v.IsArray() && len(f.uris) > 0:
			var els []string
			v.ForEach(func(_, e gjson.Result) bool {
				if e.Type == gjson.String && f.hasURI(e.Str) {
					els = append(els, e.Raw)
				}
				return true
			})
			if len(els) > 0 {
				add(k.Raw, "["+strings.Join(els, ",")+"]")
			}
		default:
			if _, ok := f.kind(name); ok {
				add(k.Raw, v.Raw)
			}
		}
		return true
	})
	b.WriteByte('}')
	return b.String()
}

// wants reports whether a listen asking for f is sent the event m.
func (f listenFilter) wants(m frame.Message) bool {
	switch m.Method() {
	case toolsListChangedMethod:
		_, ok := f.kind(filterTools)
		return ok
	case promptsListChangedMethod:
		_, ok := f.kind(filterPrompts)
		return ok
	case resourcesListChangedMethod:
		_, ok := f.kind(filterResources)
		return ok
	case resourcesUpdatedMethod:
		uri := m.Get("params.uri")
		if uri.Type != gjson.String {
			return false
		}
		return slices.ContainsFunc(f.uris, func(u filterURI) bool {
			return u.uri == uri.Str || u.uri != "" && strings.HasPrefix(uri.Str, strings.TrimSuffix(u.uri, "/")+"/")
		})
	}
	return slices.ContainsFunc(f.kinds, func(k filterKind) bool {
		switch k.name {
		case filterTools, filterPrompts, filterResources, filterURIs:
			return false
		}
		return true
	})
}

// fanQueue is a listen's queue of frames waiting for its client: it takes
// memory only for what waits.
type fanQueue struct {
	mu   sync.Mutex
	msgs []frame.Message
	wake chan struct{} // has a token when msgs may not be empty
}

// init readies q for use.
func (q *fanQueue) init() { q.wake = make(chan struct{}, 1) }

// push queues m unless max (> 0) frames wait already; 0 means no bound
// (a final frame).
func (q *fanQueue) push(m frame.Message, max int) bool {
	q.mu.Lock()
	if max > 0 && len(q.msgs) >= max {
		q.mu.Unlock()
		return false
	}
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take returns the frames waiting, oldest first, and empties the queue.
func (q *fanQueue) take() []frame.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}
