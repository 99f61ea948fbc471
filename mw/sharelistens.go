package mw

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

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

// ShareListensOptions configures [ShareListens].
type ShareListensOptions struct {
	// MaxListens bounds the listens served on one child at once, its
	// clients' together; 0 means DefaultMaxListens.
	MaxListens int
	// Rand is read once per child for the random part of the ids of the
	// listens the stage opens on it (see [IDMinter.Randomize]); nil means
	// crypto/rand.
	Rand io.Reader
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ShareListens returns the stage that serves 2026-07-28 clients'
// subscriptions/listen requests from a server that serves listens itself
// (serve's dual-era child), opening one listen on the server for all the
// clients that ask for the same notifications, and the handle that ends
// the listens gracefully when the gateway shuts down.
//
// It sits inside [ModernRouter] (see the package documentation): the ids
// it sees are the router's minted ones, unique on the server, and it
// answers by sending client-bound, as the router's other inner stages do.
// The Middleware may be built into any number of chains (one per child);
// each build serves its own child, and the handle covers them all.
//
// Listen. A server-bound subscriptions/listen (id L) is never passed on
// as it is. A params.notifications that is not an object gets -32602.
// Listens whose params.notifications ask for the same thing — the same
// members, those whose value is false or null aside, each with the same
// JSON value, in any order — and that name the same _meta protocol
// version share one listen on the server: the first one is sent to it
// under an id the stage mints, "mcp-stdio/shared-listen/<random>/<n>",
// without its _meta progressToken (a listen carries no progress); the
// others join it. A listen beyond MaxListens on the child (its clients'
// together), after the child ended, or once the handle is closed, is
// refused with [Refuse] (503 with Retry-After, -32603) before anything
// reaches the server. Handle returns once the listen is registered; its
// frames follow, client-bound.
//
// Fan-out. Every frame the server sends for its listen — the
// acknowledgement first, then the events — goes to each listen sharing
// it, with the listen's own id L set at
// params._meta["io.modelcontextprotocol/subscriptionId"] and every other
// byte kept: each client gets its own acknowledgement (one who joins
// later gets a copy of the server's, at once) and its own subscription
// id. Each copy waits in that listen's queue (at most ListenQueueSize) for
// a goroutine that hands it client-bound, so a slow client never holds
// the server's reader or the other clients; one whose queue is full is
// cut (its exchange ends, [Exchange.Cut]). The server's response to its
// listen (the graceful end, or an error) ends every listen sharing it with
// that response under L (result._meta subscriptionId rewritten the same
// way). Frames for a listen of the stage that has ended are dropped.
//
// Endings. The client: a server-bound notifications/cancelled naming L
// (the router sends it when the client goes) releases the listen and is
// swallowed; when the last listen sharing a server listen goes, the
// server is sent notifications/cancelled for its listen. The child:
// when its connection ([ConnOf] the first listen's context) ends, the
// listens are forgotten (the router answers them). The gateway:
// [SharedListens.Close] ends every listen with the final frame
// {"jsonrpc":"2.0","id":L,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":L}}}
// after what is queued for it, and cancels the server's listens.
// Every goroutine of the stage ends with its listen.
func ShareListens(o ShareListensOptions) (Middleware, *SharedListens) {
	if o.MaxListens <= 0 {
		o.MaxListens = DefaultMaxListens
	}
	ctl := &SharedListens{stages: make(map[*shareListens]struct{})}
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		st := &shareListens{
			next:    next,
			log:     log,
			ctl:     ctl,
			max:     o.MaxListens,
			groups:  make(map[[sha256.Size]byte]*listenGroup),
			ups:     make(map[frame.ID]*listenGroup),
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
		ending = append(ending, st.endAll(ctx)...)
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
	next Duplex
	log  *slog.Logger
	ctl  *SharedListens
	max  int
	ids  IDMinter

	mu      sync.Mutex
	conn    *Conn // the child's, from its first listen: watched
	gone    bool  // the child ended
	groups  map[[sha256.Size]byte]*listenGroup
	ups     map[frame.ID]*listenGroup  // by the id of the server's listen, until it ends
	members map[frame.ID]*sharedListen // by L
	recent  []frame.ID                 // listens ended here, whose router cancel may follow
}

// listenGroup is one listen on the server and the client listens sharing
// it.
type listenGroup struct {
	key     [sha256.Size]byte
	up      frame.ID
	ack     frame.Message // the server's acknowledgement, once it came
	acked   bool
	members []*sharedListen
}

// sharedListen is one client's listen.
type sharedListen struct {
	id   frame.ID
	g    *listenGroup    // guarded by the stage's mu; nil once it left
	ctx  context.Context // the listen request's: its exchange
	q    fanQueue
	dctx context.Context
	stop context.CancelFunc
	done chan struct{} // closed when nothing delivers for it any more
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
	if !m.Get("params.notifications").IsObject() {
		return st.next.ToClient.Handle(ctx, frame.ErrorResponse(id, frame.CodeInvalidParams, listenMethod+": params.notifications must be an object"))
	}
	key := listenKey(m)
	s := &sharedListen{id: id, ctx: ctx, done: make(chan struct{})}
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
	g := st.groups[key]
	open := g == nil
	if open {
		g = &listenGroup{key: key, up: st.ids.Mint(shareListenStage)}
		st.groups[key], st.ups[g.up] = g, g
	}
	g.members = append(g.members, s)
	s.g = g
	st.members[id] = s
	if g.acked {
		s.q.push(stamp(g.ack, mcp.ParamsSubscriptionID, id), 0)
	}
	st.mu.Unlock()
	st.ctl.mu.Unlock()
	if watch {
		st.conn.OnClose(st.childGone) // outside the locks: a Conn closed already runs it at once
	}
	go st.deliver(s)
	if !open {
		return nil
	}
	up, err := m.WithID(g.up)
	if err == nil && up.Get(requestProgressTokenPath).Exists() {
		up, err = up.Delete(requestProgressTokenPath)
	}
	if err == nil {
		err = st.next.ToServer.Handle(st.upCtx(ctx), up)
	}
	if err != nil {
		st.log.Warn("the server could not take a listen", "err", err)
		st.upstreamEnded(frame.ErrorResponse(g.up, frame.CodeInternalError, "the server could not take the listen: "+err.Error()))
	}
	return nil
}

// upCtx is the context of the stage's own messages to the server: the
// connection of ctx, no exchange, no end.
func (st *shareListens) upCtx(ctx context.Context) context.Context {
	return WithExchange(context.WithoutCancel(ctx), nil)
}

// listenKey returns what decides which listens share one on the server:
// the members of params.notifications (false and null ones aside) with
// their values, in name order, and the _meta protocol version.
func listenKey(m frame.Message) [sha256.Size]byte {
	type member struct{ name, value string }
	var members []member
	m.Get("params.notifications").ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.False && v.Type != gjson.Null {
			members = append(members, member{k.String(), v.Raw})
		}
		return true
	})
	slices.SortFunc(members, func(a, b member) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	h := sha256.New()
	write := func(s string) {
		h.Write(strconv.AppendInt(nil, int64(len(s)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	write(m.Get(mcp.ParamsProtocolVersion).Raw)
	for _, mb := range members {
		write(mb.name)
		write(mb.value)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
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

// upstreamFrame fans a frame of the server's listen up out to the listens
// sharing it.
func (st *shareListens) upstreamFrame(up frame.ID, m frame.Message) {
	var over []*sharedListen
	st.mu.Lock()
	g := st.ups[up]
	if g == nil {
		st.mu.Unlock()
		st.log.Debug("dropped a frame of a listen that has ended", "method", m.Method())
		return
	}
	if m.Method() == listenAckMethod && !g.acked {
		g.ack, g.acked = m, true
	}
	for _, s := range g.members {
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

// upstreamEnded ends the listens sharing the server's listen that resp
// answers, each with resp under its own id.
func (st *shareListens) upstreamEnded(resp frame.Message) {
	st.mu.Lock()
	g := st.ups[resp.ID()]
	if g == nil {
		st.mu.Unlock()
		return
	}
	st.closeGroupLocked(g)
	members := g.members
	g.members = nil
	for _, s := range members {
		s.g = nil
		delete(st.members, s.id)
		st.rememberLocked(s.id)
		out, err := resp.WithID(s.id)
		if err != nil {
			out = frame.ErrorResponse(s.id, frame.CodeInternalError, "the server ended the listen")
		}
		if sid := out.Get(mcp.ResultSubscriptionID); sid.Exists() && frame.ID(sid.Raw) == g.up {
			out = stamp(out, mcp.ResultSubscriptionID, s.id)
		}
		s.q.push(out, 0)
	}
	st.mu.Unlock()
}

// closeGroupLocked forgets g: later frames of its server listen are
// dropped, later listens open another. st.mu is held.
func (st *shareListens) closeGroupLocked(g *listenGroup) {
	delete(st.ups, g.up)
	if st.groups[g.key] == g {
		delete(st.groups, g.key)
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

// drop ends s abruptly: it stops delivering, its exchange is cut when cut,
// and the server's listen is cancelled when s was the last to share it.
func (st *shareListens) drop(s *sharedListen, cut bool) {
	var cancelUp frame.ID
	st.mu.Lock()
	if st.members[s.id] == s {
		delete(st.members, s.id)
		if cut {
			st.rememberLocked(s.id)
		}
	}
	if g := s.g; g != nil {
		s.g = nil
		g.members = slices.DeleteFunc(g.members, func(o *sharedListen) bool { return o == s })
		if len(g.members) == 0 && st.ups[g.up] == g {
			st.closeGroupLocked(g)
			cancelUp = g.up
		}
	}
	conn := st.conn
	st.mu.Unlock()
	s.stop()
	if cut {
		if x := ExchangeOf(s.ctx); x != nil {
			x.Cut()
		}
	}
	if cancelUp != "" {
		st.cancelUpstream(conn, cancelUp, "no client listens any more")
	}
}

// cancelUpstream tells the server to end its listen up.
func (st *shareListens) cancelUpstream(conn *Conn, up frame.ID, why string) {
	ctx := context.Background()
	if conn != nil {
		ctx = WithConn(ctx, conn)
	}
	if err := st.next.ToServer.Handle(ctx, cancelNotification(up, why)); err != nil {
		st.log.Debug("could not cancel a listen on the server", "err", err)
	}
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
		s.g = nil
	}
	clear(st.members)
	clear(st.groups)
	clear(st.ups)
	st.mu.Unlock()
	for _, s := range all {
		s.stop()
	}
}

// endAll ends every listen gracefully, cancels the server's listens, and
// returns the listens ended.
func (st *shareListens) endAll(ctx context.Context) []*sharedListen {
	st.mu.Lock()
	var ending []*sharedListen
	ups := make([]frame.ID, 0, len(st.ups))
	for up, g := range st.ups {
		ups = append(ups, up)
		for _, s := range g.members {
			s.g = nil
			s.q.push(listenFinal(s.id), 0)
			ending = append(ending, s)
		}
		g.members = nil
	}
	clear(st.members)
	clear(st.groups)
	clear(st.ups)
	conn := st.conn
	st.mu.Unlock()
	for _, up := range ups {
		st.cancelUpstream(conn, up, "the gateway is shutting down")
	}
	return ending
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
