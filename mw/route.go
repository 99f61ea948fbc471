package mw

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Defaults and bounds of [Route].
const (
	// DefaultBacklog bounds the server-initiated messages kept while the
	// client has no stream open to receive them.
	DefaultBacklog = 256
	// DefaultRetry is the reconnection time the priming event of a POST's
	// event stream asks the client to wait before it resumes the stream.
	DefaultRetry = 2 * time.Second
	// DefaultResumeGrace is how long the event stream of a POST whose
	// client went away before its answer is kept for a GET that resumes
	// it.
	DefaultResumeGrace = time.Minute
	// keptEvents bounds the events a stream keeps for a client that
	// resumes it with Last-Event-ID, and the messages that wait for the
	// client of a POST stream to come back.
	keptEvents = 256
	// keptStreams bounds the POST streams of a session that wait for
	// their clients to come back with answers due.
	keptStreams = 64
	// keptDone and keptDoneBytes bound the POST streams of a session kept
	// after their answers went out, and the bytes of their events, for a
	// client whose connection died unnoticed.
	keptDone      = 16
	keptDoneBytes = 4 << 20
)

// RouteOptions configures [Route].
type RouteOptions struct {
	// Conn is the connection (serve: the session) the stage routes for;
	// when it ends, the stage answers every request still waiting with
	// -32000 "session ended: <cause>" and ends every exchange. Its
	// protocol version decides whether event streams carry ids and a
	// priming event. Required.
	Conn *Conn
	// Backlog bounds the server-initiated messages kept while the client
	// has no stream open for them; the oldest is dropped (with a warning)
	// when it is full. 0 means [DefaultBacklog].
	Backlog int
	// Retry is the reconnection time the priming event of a POST's event
	// stream names (its retry field); 0 means [DefaultRetry], a negative
	// value leaves the field out.
	Retry time.Duration
	// ResumeGrace is how long the event stream of a POST whose client
	// went away before the answer waits for a GET to resume it (one that
	// had its answers is kept one to two ResumeGrace); 0 means
	// [DefaultResumeGrace].
	ResumeGrace time.Duration
	// AfterFunc runs f after d unless the returned stop is called first;
	// it times ResumeGrace. nil means time.AfterFunc. Tests inject a fake.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Route returns serve's routing stage: the client edge of a session's
// chain, which hands each client-bound message to the HTTP exchange it
// belongs to (see the package documentation for where it sits). Its
// server-bound side records which exchange each of the client's requests
// came on; its client-bound side sends there, in this order:
//
//   - a response goes to the POST waiting for its raw id, which ends once
//     every request it carried is answered; a response nobody waits for
//     (its client went away for good, or cancelled it) is dropped;
//   - notifications/progress goes to the event-stream POST that
//     registered its progressToken;
//   - any other request or notification goes to the oldest event-stream
//     POST still open, else the session's standalone stream (the GET),
//     else a bounded backlog that the next GET stream receives first. An
//     exchange that cannot take a message without a wait that could stall
//     the server ([frame.ErrBusy]) is passed over.
//
// A GET opens the standalone stream. A session has one: a new GET takes
// over from one still open, which ends at once (a client whose connection
// broke without the server noticing comes back on a new one), and what
// the old one had not taken goes to the new one. Its events carry ids
// (g1, g2, …) and the latest 256 are kept: a GET with Last-Event-ID gets
// the events after it again, then the backlog. What a stream did not take
// when it ended goes back to the backlog.
//
// Once the session's protocol version is known (not on the initialize's
// own stream), the event stream of each POST carrying requests has ids
// too: the POST stream numbered n names its events pn-1, pn-2, … and keeps
// the latest 256. For clients of MCP 2025-11-25 and later it opens with a
// priming event, pn-0 with empty data and the retry field (RouteOptions.
// Retry), so that a client can resume it before any message came. A GET
// with Last-Event-ID naming an event of such a stream resumes it: it gets
// the kept events after that one, then what the stream has not carried
// yet, then what comes, and ends after the last answer, as the POST would
// have. It takes the stream over from an exchange still carrying it,
// which ends at once.
//
// When the client of a POST stream goes away before every answer was
// sent, the stream waits for it, ResumeGrace at most (at most 64 such
// streams per session, the oldest let go first): what it had not written,
// and what comes for it (its answers, its progress), waits with it, up to
// 256 messages besides the answers. A stream whose wait runs out is let
// go: its answers are dropped (with a warning) and its other messages
// routed again. A stream whose answers all went out is kept for one to two
// ResumeGrace (at most 16 per session, with at most 4 MiB of events, the
// oldest let go first), for a client whose connection broke without the
// server noticing. A GET naming a POST stream that is not kept ends at
// once without an event.
//
// A client's notifications/cancelled finishes the cancelled request's POST
// at once (the server need not answer it): an event stream simply ends
// without the answer, a JSON answer carries -32000 "request cancelled" in
// its place. So does a request the chain inside reports cancelled
// ([frame.ErrCancelled]) instead of delivering it.
//
// Route relies on a stage inside it refusing a request whose id is already
// waiting ([RefuseDuplicateIDs]): two requests in flight with one raw id
// cannot both be answered.
func Route(o RouteOptions) Middleware {
	o = o.withDefaults()
	return func(next Duplex) Duplex {
		r := newRouter(o, next)
		return Duplex{ToServer: HandlerFunc(r.toServer), ToClient: HandlerFunc(r.toClient)}
	}
}

// withDefaults returns o with its zero values replaced by the defaults.
func (o RouteOptions) withDefaults() RouteOptions {
	if o.Backlog <= 0 {
		o.Backlog = DefaultBacklog
	}
	switch {
	case o.Retry == 0:
		o.Retry = DefaultRetry
	case o.Retry < 0:
		o.Retry = 0
	}
	if o.ResumeGrace <= 0 {
		o.ResumeGrace = DefaultResumeGrace
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return o
}

// newRouter returns the routing stage of o (with its defaults) in front
// of next, bound to o.Conn.
func newRouter(o RouteOptions, next Duplex) *router {
	r := &router{
		next:      next,
		log:       loggerOrDiscard(o.Logger),
		conn:      o.Conn,
		backlogN:  o.Backlog,
		retry:     o.Retry,
		grace:     o.ResumeGrace,
		afterFunc: o.AfterFunc,
		pending:   make(map[frame.ID]*post),
		progress:  make(map[string]*post),
		streams:   make(map[uint64]*post),
		getEvents: events{prefix: "g"},
	}
	r.life, r.stop = context.WithCancel(context.Background())
	r.now, r.nowStop = context.WithCancel(context.Background())
	r.nowStop()
	o.Conn.OnClose(r.closeAll)
	return r
}

type router struct {
	next      Duplex
	log       *slog.Logger
	conn      *Conn
	backlogN  int
	retry     time.Duration
	grace     time.Duration
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	// life ends when the connection does; sends that may wait are bound by
	// it. now is done from the start: a send under it never waits.
	life    context.Context
	stop    context.CancelFunc
	now     context.Context
	nowStop context.CancelFunc

	mu       sync.Mutex
	closed   bool
	pending  map[frame.ID]*post // request id → the POST waiting for its response
	progress map[string]*post   // raw progressToken → its POST
	open     []*post            // event streams carrying requests, on an exchange, oldest first
	streams  map[uint64]*post   // POST streams with event ids, by number, until they are let go
	waiting  []*post            // POST streams waiting for their clients, oldest first
	lastPOST uint64             // the number of the latest POST stream
	// POST streams kept after their answers went out: a sweep every
	// r.grace lets go of the older generation (done[0]) and ages the
	// newer (done[1]), so each is kept between one and two r.grace.
	done      [2][]*post
	doneBytes int         // of the events they keep
	stopSweep func() bool // the next sweep's timer; nil when none is due
	get       Exchange    // the standalone stream, if open
	// getEvents names and keeps the standalone stream's events.
	getEvents events
	backlog   []frame.Message
}

// post is a POST carrying requests: the ids it waits for and, on an event
// stream, the progress tokens that route to it.
type post struct {
	x         Exchange // where its messages go; nil while it waits for its client
	sse       bool
	ids       []frame.ID
	remaining int      // responses not yet sent
	tokens    []string // raw progressToken values registered for it
	// An event stream with ids has a number n (0: none) and events.
	n      uint64
	events events
	primed bool
	// While it waits for its client (x nil): what waits with it, and the
	// timer of the wait (its generation voids a timer that fired late).
	held      []frame.Message
	stopGrace func() bool
	graceGen  uint64
	// finished: its answers went out and it is kept for a late resume,
	// with the bytes of its events.
	finished bool
	bytes    int
}

// events names the events of one stream (its prefix, then a count from 1)
// and keeps the latest keptEvents of them for a client that resumes it.
// The transport names events while it holds a lock of its own that
// [Exchange.Cut] waits for, so events has its own mutex and never takes
// the router's.
type events struct {
	prefix string

	mu   sync.Mutex
	seq  uint64 // the last event's number
	sent []sentEvent
}

// sentEvent is an event a stream carried, kept for a reconnect.
type sentEvent struct {
	id string
	m  frame.Message
}

// name gives m the stream's next event id and keeps the event (the oldest
// beyond keptEvents are forgotten). An event is kept before it is written:
// one the connection broke on is sent again to a client that resumes
// from before it.
func (e *events) name(m frame.Message) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	var buf [48]byte
	id := string(strconv.AppendUint(append(buf[:0], e.prefix...), e.seq, 10))
	if len(e.sent) >= keptEvents {
		e.sent[0] = sentEvent{}
		e.sent = e.sent[1:]
	}
	e.sent = append(e.sent, sentEvent{id: id, m: m})
	return id
}

// after returns the kept events after the one numbered n; nothing when n
// is the latest or beyond. missed is the id of the oldest kept event when
// events after n are no longer kept (the run starts there), else "".
func (e *events) after(n uint64) (run []sentEvent, missed string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n >= e.seq || len(e.sent) == 0 {
		return nil, ""
	}
	first := e.seq - uint64(len(e.sent)) + 1 // the number of sent[0]
	if n+1 < first {
		missed = e.sent[0].id
		n = first - 1
	}
	return slices.Clone(e.sent[n+1-first:]), missed
}

// named reports whether the stream has named an event.
func (e *events) named() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq > 0
}

// size returns the bytes of the events kept.
func (e *events) size() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.sent {
		n += ev.m.Len()
	}
	return n
}

// fresh returns msgs without the events e keeps: messages an exchange did
// not take that were replays of kept events, which a later resume sends
// again anyway.
func (e *events) fresh(msgs []frame.Message) []frame.Message {
	if len(msgs) == 0 {
		return msgs
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(msgs), func(m frame.Message) bool {
		return slices.ContainsFunc(e.sent, func(ev sentEvent) bool { return sameMessage(ev.m, m) })
	})
}

// sameMessage reports whether a and b are one message: the same bytes in
// memory, not merely equal ones.
func sameMessage(a, b frame.Message) bool {
	x, y := a.Bytes(), b.Bytes()
	return len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
}

// parseEventID reads a Last-Event-ID of this stage: the standalone
// stream's "g<k>" (post 0), or "p<n>-<k>" of POST stream n (n ≥ 1). ok is
// false for anything else.
func parseEventID(id string) (post, event uint64, ok bool) {
	if k, isGET := strings.CutPrefix(id, "g"); isGET {
		event, err := strconv.ParseUint(k, 10, 64)
		return 0, event, err == nil
	}
	rest, isPOST := strings.CutPrefix(id, "p")
	n, k, dash := strings.Cut(rest, "-")
	if !isPOST || !dash {
		return 0, 0, false
	}
	post, err := strconv.ParseUint(n, 10, 64)
	if err != nil || post == 0 {
		return 0, 0, false
	}
	event, err = strconv.ParseUint(k, 10, 64)
	return post, event, err == nil
}

// primes reports whether clients of protocol version v get a priming
// event: MCP 2025-11-25 introduced it ([mcp.PrimingEvents]).
func primes(v string) bool { return mcp.Has(v, mcp.PrimingEvents) }

func (r *router) toServer(ctx context.Context, m frame.Message) error {
	x := ExchangeOf(ctx)
	switch {
	case x == nil:
		return r.next.ToServer.Handle(ctx, m)
	case x.Method() == http.MethodGet:
		return r.listen(m, x)
	}
	if _, ok := m.FirstRequestID(); !ok {
		for el := range m.Elements() {
			if el.Method() != cancelMethod {
				continue
			}
			if id, ok := cancelledRequestID(el); ok {
				r.finish(nil, id)
			}
		}
		return r.next.ToServer.Handle(ctx, m)
	}
	p, err := r.register(m, x)
	if err != nil {
		return err
	}
	err = r.next.ToServer.Handle(ctx, m)
	switch {
	case err == nil:
		if len(p.ids) == 0 {
			x.End() // nothing of its own to wait for
		}
		return nil
	case errors.Is(err, frame.ErrCancelled):
		var ce *CancelledError
		if errors.As(err, &ce) {
			for _, id := range ce.IDs {
				r.finish(p, id)
			}
		} else {
			r.finish(p, m.ID())
		}
		return nil
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		// The connection ended while m was on its way (its server died):
		// closeAll has answered m's requests ("session ended") on x
		// already, so the transport must not answer them a second time.
		return nil
	}
	r.unregister(p)
	return err
}

// register records that the requests m carries wait on x, numbers x's
// events when the session's version is known, and lets go of the POST
// when x is over.
func (r *router) register(m frame.Message, x Exchange) (*post, error) {
	version := r.conn.ProtocolVersion()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		id, _ := m.FirstRequestID()
		return nil, Refuse(http.StatusNotFound, id, frame.CodeInvalidRequest, "session not found")
	}
	p := &post{x: x, sse: x.EventStream()}
	for el := range m.Elements() {
		if el.Kind() != frame.Request {
			continue
		}
		id := el.ID()
		if _, taken := r.pending[id]; taken {
			continue // a duplicate, for the stage inside to refuse: never clobber
		}
		r.pending[id] = p
		p.ids = append(p.ids, id)
		p.remaining++
		if !p.sse {
			continue
		}
		tok := el.Get("params._meta.progressToken")
		if tok.Type != gjson.String && tok.Type != gjson.Number {
			continue
		}
		if _, taken := r.progress[tok.Raw]; !taken {
			r.progress[tok.Raw] = p
			p.tokens = append(p.tokens, tok.Raw)
		}
	}
	if p.sse && len(p.ids) > 0 {
		r.open = append(r.open, p)
		if version != "" {
			r.lastPOST++
			p.n = r.lastPOST
			prime := "p" + strconv.FormatUint(p.n, 10) + "-0"
			p.events.prefix = prime[:len(prime)-1]
			r.streams[p.n] = p
			x.NumberEvents(p.events.name)
			if primes(version) {
				x.Prime(prime, r.retry)
				p.primed = true
			}
		}
	}
	r.mu.Unlock()
	x.OnDone(func(unsent []frame.Message) { r.abandon(p, x, unsent) })
	return p, nil
}

// unregister forgets the requests of a POST the chain inside refused.
func (r *router) unregister(p *post) {
	r.mu.Lock()
	r.forgetLocked(p)
	r.mu.Unlock()
}

// forgetLocked stops waiting for p's responses (late ones are dropped) and
// routing server messages to p, and lets go of its stream. The caller
// holds r.mu.
func (r *router) forgetLocked(p *post) {
	for _, id := range p.ids {
		if r.pending[id] == p {
			delete(r.pending, id)
		}
	}
	p.remaining = 0
	r.retire(p)
	if p.n != 0 && r.streams[p.n] == p {
		delete(r.streams, p.n)
	}
	r.unwaitLocked(p)
	if p.finished {
		p.finished = false
		r.doneBytes -= p.bytes
		for i, gen := range r.done {
			if j := slices.Index(gen, p); j >= 0 {
				r.done[i] = slices.Delete(gen, j, j+1)
				break
			}
		}
	}
}

// resumableLocked reports whether a client may resume p's stream: it has
// ids, and the client may have seen one. The caller holds r.mu.
func (r *router) resumableLocked(p *post) bool {
	return p.n != 0 && r.streams[p.n] == p && (p.primed || p.events.named())
}

// abandon handles the end of x, an exchange carrying p. When p's client
// may resume it: if x ended before p was done (its client went away), p
// waits for the client with what x had not taken; else p is kept for a
// late resume. Otherwise p is forgotten, and the server messages x did
// not take are routed again. Nothing happens when p has moved to another
// exchange.
func (r *router) abandon(p *post, x Exchange, unsent []frame.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.x != x || r.closed {
		return
	}
	unsent = p.events.fresh(unsent) // replays not taken are kept already
	switch {
	case !r.resumableLocked(p):
		held := p.held
		p.held = nil
		r.forgetLocked(p)
		r.placeAgainLocked(slices.Concat(unsent, held))
	case p.remaining > 0 || len(unsent) > 0 || len(p.held) > 0:
		r.detachLocked(p, unsent)
	default:
		r.retainLocked(p)
	}
}

// retainLocked keeps p, whose answers all went out, for a client whose
// connection broke unnoticed and that resumes it late: the oldest kept
// are let go beyond keptDone streams or keptDoneBytes bytes of events.
// The caller holds r.mu.
func (r *router) retainLocked(p *post) {
	p.x = nil
	p.finished = true
	p.bytes = p.events.size()
	r.done[1] = append(r.done[1], p)
	r.doneBytes += p.bytes
	for len(r.done[0])+len(r.done[1]) > keptDone || r.doneBytes > keptDoneBytes {
		oldest := r.done[1][0]
		if len(r.done[0]) > 0 {
			oldest = r.done[0][0]
		}
		r.forgetLocked(oldest)
	}
	if r.stopSweep == nil {
		r.stopSweep = r.afterFunc(r.grace, r.sweep)
	}
}

// sweep lets go of the older generation of the POST streams kept after
// their answers, and arms the next sweep while any are kept.
func (r *router) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopSweep = nil
	if r.closed {
		return
	}
	for _, p := range slices.Clone(r.done[0]) {
		r.forgetLocked(p)
	}
	r.done[0], r.done[1] = r.done[1], nil
	if len(r.done[0]) > 0 {
		r.stopSweep = r.afterFunc(r.grace, r.sweep)
	}
}

// placeAgainLocked routes again the server messages among msgs, without
// waiting; responses are dropped. The caller holds r.mu.
func (r *router) placeAgainLocked(msgs []frame.Message) {
	for _, m := range msgs {
		if !m.Kind().IsResponse() {
			r.placeLocked(m)
		}
	}
}

// detachLocked has p wait for its client, holding unsent ahead of what
// waits already, for r.grace at most. The caller holds r.mu.
func (r *router) detachLocked(p *post, unsent []frame.Message) {
	p.x = nil
	if i := slices.Index(r.open, p); i >= 0 {
		r.open = slices.Delete(r.open, i, i+1)
	}
	held := p.held
	p.held = nil
	for _, m := range slices.Concat(unsent, held) {
		r.holdLocked(p, m)
	}
	r.waiting = append(r.waiting, p)
	p.graceGen++
	gen := p.graceGen
	p.stopGrace = r.afterFunc(r.grace, func() { r.expire(p, gen) })
	r.log.Debug("a POST stream's client went away: the stream waits for a resume", "stream", p.n, "for", r.grace, "answers_due", p.remaining)
	if len(r.waiting) > keptStreams {
		oldest := r.waiting[0]
		r.log.Warn("too many POST streams wait for their clients: let go of the oldest", "stream", oldest.n, "max", keptStreams)
		r.dropLocked(oldest)
	}
}

// unwaitLocked ends p's wait for its client, if it waits. The caller
// holds r.mu.
func (r *router) unwaitLocked(p *post) {
	if i := slices.Index(r.waiting, p); i >= 0 {
		r.waiting = slices.Delete(r.waiting, i, i+1)
	}
	if p.stopGrace != nil {
		p.stopGrace()
		p.stopGrace = nil
	}
	p.graceGen++
}

// expire lets go of p when its client did not resume it in time.
func (r *router) expire(p *post, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || p.x != nil || p.graceGen != gen || !slices.Contains(r.waiting, p) {
		return
	}
	r.log.Warn("a POST stream's client did not come back to resume it: its answers are dropped", "stream", p.n, "after", r.grace, "answers_due", p.remaining)
	r.dropLocked(p)
}

// dropLocked lets go of p, which waits for its client: the answers it
// holds are dropped, its other messages routed again. The caller holds
// r.mu.
func (r *router) dropLocked(p *post) {
	held := p.held
	p.held = nil
	for _, m := range held {
		if m.Kind().IsResponse() {
			r.log.Debug("dropped a response: its client did not come back", "id", m.ID().String())
		}
	}
	r.forgetLocked(p)
	r.placeAgainLocked(held)
}

// holdLocked keeps m for p's client, which went away; beyond keptEvents
// messages besides responses, the oldest of those is dropped. The caller
// holds r.mu.
func (r *router) holdLocked(p *post, m frame.Message) {
	if len(p.held) >= keptEvents && !m.Kind().IsResponse() {
		others := 0
		for _, h := range p.held {
			if !h.Kind().IsResponse() {
				others++
			}
		}
		if others >= keptEvents {
			i := slices.IndexFunc(p.held, func(h frame.Message) bool { return !h.Kind().IsResponse() })
			r.log.Warn("too many messages wait for a POST stream's client: dropped the oldest", "stream", p.n, "method", p.held[i].Method(), "max", keptEvents)
			p.held = slices.Delete(p.held, i, i+1)
		}
	}
	p.held = append(p.held, m)
}

// retire stops routing server messages to p. The caller holds r.mu.
func (r *router) retire(p *post) {
	if i := slices.Index(r.open, p); i >= 0 {
		r.open = slices.Delete(r.open, i, i+1)
	}
	for _, t := range p.tokens {
		if r.progress[t] == p {
			delete(r.progress, t)
		}
	}
	p.tokens = nil
}

// finish lets go of the request id the client cancelled: a JSON answer
// gets "request cancelled" in its place, an event stream nothing. When p
// is set, only a request waiting on p is finished.
func (r *router) finish(p *post, id frame.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.pending[id]
	if q == nil || (p != nil && q != p) {
		return
	}
	delete(r.pending, id)
	q.remaining--
	done := q.remaining == 0
	if done {
		r.retire(q)
	}
	switch {
	case q.x == nil: // waiting for its client: let go when nothing is due or held
		if done && len(q.held) == 0 {
			r.forgetLocked(q)
		}
	case !q.sse && done:
		_ = q.x.SendLast(r.now, frame.ErrorResponse(id, frame.CodeGateway, "request cancelled"), "")
	case !q.sse:
		_ = q.x.Send(r.now, frame.ErrorResponse(id, frame.CodeGateway, "request cancelled"), "")
	case done:
		q.x.End()
	}
}

func (r *router) toClient(_ context.Context, m frame.Message) error {
	switch {
	case m.Kind() == frame.Invalid:
		r.log.Warn("dropped a server message that is not JSON-RPC")
		return nil
	case m.Kind().IsResponse():
		r.answer(m)
		return nil
	}
	r.route(m)
	return nil
}

// answer sends a response to the POST waiting for it, and ends that POST
// once every request it carried is answered. A response is queued at
// once, so it is sent under r.mu: the POST cannot move meanwhile.
func (r *router) answer(m frame.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[m.ID()]
	if p == nil {
		r.log.Debug("dropped a late response: nobody waits for it", "id", m.ID().String())
		return
	}
	delete(r.pending, m.ID())
	p.remaining--
	done := p.remaining == 0
	if done {
		r.retire(p)
	}
	if p.x == nil {
		r.holdLocked(p, m) // for the client to come back
		return
	}
	send := p.x.Send
	if done {
		send = p.x.SendLast // the answer's end goes with it
	}
	err := send(r.life, m, "")
	switch {
	case err == nil:
	case errors.Is(err, frame.ErrExchangeOver) && r.resumableLocked(p):
		r.holdLocked(p, m) // its client is gone: p is about to wait for it
	default:
		r.log.Debug("dropped a response: its client went away", "id", m.ID().String())
		if done {
			p.x.End()
		}
	}
}

// route sends a server request or notification to the first exchange
// that takes it, or keeps it for a POST stream that waits for its client,
// or for the next standalone stream.
func (r *router) route(m frame.Message) {
	var tried []Exchange
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		x, p := r.targetLocked(m, tried)
		switch {
		case p != nil && p.x == nil:
			r.holdLocked(p, m)
			r.mu.Unlock()
			return
		case x == nil:
			r.keepLocked(m)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		err := x.Send(r.life, m, "")
		if err == nil || r.life.Err() != nil {
			return
		}
		if p != nil && errors.Is(err, frame.ErrExchangeOver) && r.holdIfGone(p, x, m) {
			return
		}
		tried = append(tried, x) // busy, or over: the next one
	}
}

// holdIfGone keeps m for p when x, p's exchange, is over while p still
// waits for answers and its client may resume it (p is about to wait for
// it), and reports whether it did.
func (r *router) holdIfGone(p *post, x Exchange, m frame.Message) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.x != x || p.remaining == 0 || !r.resumableLocked(p) {
		return false
	}
	r.holdLocked(p, m)
	return true
}

// targetLocked returns the first exchange that may carry m and is not in
// tried, with its POST (nil for the standalone stream); or no exchange and
// the POST that m belongs to while it waits for its client; or neither.
// The caller holds r.mu.
func (r *router) targetLocked(m frame.Message, tried []Exchange) (Exchange, *post) {
	ok := func(x Exchange) bool { return x != nil && !slices.Contains(tried, x) }
	if m.Method() == "notifications/progress" {
		if tok := m.Get("params.progressToken"); tok.Exists() {
			if p := r.progress[tok.Raw]; p != nil && (p.x == nil || ok(p.x)) {
				return p.x, p
			}
		}
	}
	for _, p := range r.open {
		if ok(p.x) {
			return p.x, p
		}
	}
	if ok(r.get) {
		return r.get, nil
	}
	return nil, nil
}

// placeLocked routes m without waiting, for messages an exchange left
// behind. The caller holds r.mu.
func (r *router) placeLocked(m frame.Message) {
	var tried []Exchange
	for {
		x, p := r.targetLocked(m, tried)
		switch {
		case p != nil && p.x == nil:
			r.holdLocked(p, m)
			return
		case x == nil:
			r.keepLocked(m)
			return
		}
		if x.Send(r.now, m, "") == nil {
			return
		}
		tried = append(tried, x)
	}
}

// keepLocked adds m to the backlog, dropping the oldest message when it is
// full. The caller holds r.mu.
func (r *router) keepLocked(m frame.Message) {
	if len(r.backlog) >= r.backlogN {
		r.log.Warn("backlog full: dropped the oldest server message waiting for a stream", "method", r.backlog[0].Method(), "max", r.backlogN)
		r.backlog[0] = frame.Message{}
		r.backlog = r.backlog[1:]
	}
	r.backlog = append(r.backlog, m)
}

// listen takes a GET's exchange x: it resumes the POST stream its
// Last-Event-ID names, or else opens the standalone stream, taking over
// from the one open.
func (r *router) listen(m frame.Message, x Exchange) error {
	last := m.Header().Get(frame.HeaderLastEventID)
	stream, event, named := parseEventID(last)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Refuse(http.StatusNotFound, "", frame.CodeInvalidRequest, "session not found")
	}
	if named && stream != 0 {
		return r.resume(stream, event, last, x)
	}
	var left []frame.Message
	if r.get != nil {
		// It ends; what it had not taken goes to x, but for replays of
		// kept events, which x replays itself when asked to.
		left = r.getEvents.fresh(r.get.Cut())
		r.log.Info("a new GET stream takes over from the one open")
	}
	r.get = x
	x.NumberEvents(r.getEvents.name)
	if named {
		r.replayLocked(x, &r.getEvents, event, last)
	}
	backlog := r.backlog // what waited goes first
	r.backlog = nil
	for _, b := range slices.Concat(left, backlog) {
		if x.Send(r.now, b, "") != nil {
			r.keepLocked(b)
		}
	}
	r.mu.Unlock()
	x.OnDone(func(unsent []frame.Message) { r.unlisten(x, unsent) })
	return nil
}

// replayLocked sends on x the events of e after the one numbered event,
// which last names. The caller holds r.mu.
func (r *router) replayLocked(x Exchange, e *events, event uint64, last string) {
	run, missed := e.after(event)
	if missed != "" {
		r.log.Warn("a resumed stream missed events no longer kept", "last_event_id", last, "oldest_kept", missed)
	}
	for _, ev := range run {
		_ = x.Send(r.now, ev.m, ev.id)
	}
}

// resume has the GET exchange x carry POST stream n from the event after
// the one numbered event (last names it): the kept events after it, what
// waited for the client (or what the exchange carrying the stream had not
// taken; that exchange ends), then what comes. It ends x at once when the
// stream is over or was let go. The caller holds r.mu; resume releases
// it.
func (r *router) resume(n, event uint64, last string, x Exchange) error {
	p := r.streams[n]
	if p == nil {
		r.mu.Unlock()
		r.log.Info("a GET named an event of a POST stream that is over or was let go: it ends at once", "last_event_id", last)
		x.End()
		return nil
	}
	if p.finished { // its answers went out: the events after last, and the end
		r.replayLocked(x, &p.events, event, last)
		r.mu.Unlock()
		r.log.Debug("a GET resumes a POST stream that had its answers", "stream", n, "last_event_id", last)
		x.End()
		return nil
	}
	var left []frame.Message
	if p.x != nil {
		// The old exchange ends and x takes over what it had not taken,
		// but for replays of kept events, which x replays itself.
		left = p.events.fresh(p.x.Cut())
	} else {
		left, p.held = p.held, nil
		r.unwaitLocked(p)
	}
	p.x = x
	x.NumberEvents(p.events.name)
	r.replayLocked(x, &p.events, event, last)
	for _, m := range left {
		if x.Send(r.now, m, "") != nil {
			r.log.Warn("dropped a message of a resumed POST stream: its GET took no more", "method", m.Method())
		}
	}
	if p.remaining == 0 {
		x.End() // its answers are all on x now
	} else if !slices.Contains(r.open, p) {
		i := slices.IndexFunc(r.open, func(q *post) bool { return q.n > p.n })
		if i < 0 {
			i = len(r.open)
		}
		r.open = slices.Insert(r.open, i, p) // by age, as it was
	}
	r.mu.Unlock()
	r.log.Debug("a GET resumes a POST stream", "stream", n, "last_event_id", last)
	x.OnDone(func(unsent []frame.Message) { r.abandon(p, x, unsent) })
	return nil
}

// unlisten closes the standalone stream x: what it did not take is kept,
// ahead of anything newer.
func (r *router) unlisten(x Exchange, unsent []frame.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.get == x {
		r.get = nil
	}
	unsent = r.getEvents.fresh(unsent) // replays not taken are kept already
	if r.closed || len(unsent) == 0 {
		return
	}
	backlog := r.backlog
	r.backlog = nil
	for _, m := range unsent {
		r.keepLocked(m)
	}
	for _, m := range backlog {
		r.keepLocked(m)
	}
}

// closeAll lets everything go when the connection ends: every request
// still waiting is answered with an error, and every exchange ends.
func (r *router) closeAll(cause error) {
	r.stop() // a send waiting for room gives up
	r.mu.Lock()
	r.closed = true
	type due struct {
		id frame.ID
		x  Exchange
	}
	var answers []due
	var posts []Exchange
	for id, p := range r.pending {
		if p.x == nil {
			continue // its client went away
		}
		answers = append(answers, due{id, p.x})
		if !slices.Contains(posts, p.x) {
			posts = append(posts, p.x)
		}
	}
	for _, p := range r.waiting {
		p.stopGrace()
	}
	if r.stopSweep != nil {
		r.stopSweep()
	}
	r.done = [2][]*post{}
	r.pending = make(map[frame.ID]*post)
	get := r.get
	clear(r.progress)
	clear(r.streams)
	r.open, r.waiting, r.backlog = nil, nil, nil
	r.mu.Unlock()
	r.getEvents.mu.Lock()
	r.getEvents.sent = nil
	r.getEvents.mu.Unlock()
	for _, a := range answers {
		_ = a.x.Send(r.now, frame.ErrorResponse(a.id, frame.CodeGateway, "session ended: "+cause.Error()), "")
	}
	for _, x := range posts {
		x.End()
	}
	if get != nil {
		get.End()
	}
}
