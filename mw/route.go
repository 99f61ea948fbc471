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

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Defaults and bounds of [Route].
const (
	// DefaultBacklog bounds the server-initiated messages kept while the
	// client has no stream open to receive them.
	DefaultBacklog = 256
	// keptEvents bounds the standalone stream's events kept for a client
	// that reconnects with Last-Event-ID.
	keptEvents = 256
)

// RouteOptions configures [Route].
type RouteOptions struct {
	// Conn is the connection (serve: the session) the stage routes for;
	// when it ends, the stage answers every request still waiting with
	// -32000 "session ended: <cause>" and ends every exchange. Required.
	Conn *Conn
	// Backlog bounds the server-initiated messages kept while the client
	// has no stream open for them; the oldest is dropped (with a warning)
	// when it is full. 0 means [DefaultBacklog].
	Backlog int
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
//     (its client went away, or cancelled it) is dropped;
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
	if o.Backlog <= 0 {
		o.Backlog = DefaultBacklog
	}
	return func(next Duplex) Duplex {
		r := &router{
			next:      next,
			log:       loggerOrDiscard(o.Logger),
			backlogN:  o.Backlog,
			pending:   make(map[frame.ID]*post),
			progress:  make(map[string]*post),
			getEvents: events{prefix: "g"},
		}
		r.life, r.stop = context.WithCancel(context.Background())
		r.now, r.nowStop = context.WithCancel(context.Background())
		r.nowStop()
		o.Conn.OnClose(r.closeAll)
		return Duplex{ToServer: HandlerFunc(r.toServer), ToClient: HandlerFunc(r.toClient)}
	}
}

type router struct {
	next     Duplex
	log      *slog.Logger
	backlogN int
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
	open     []*post            // event-stream POSTs carrying requests, oldest first
	get      Exchange           // the standalone stream, if open
	// getEvents names and keeps the standalone stream's events.
	getEvents events
	backlog   []frame.Message
}

// post is a POST carrying requests: the ids it waits for and, on an event
// stream, the progress tokens that route to it.
type post struct {
	x         Exchange
	sse       bool
	ids       []frame.ID
	remaining int      // responses not yet sent
	tokens    []string // raw progressToken values registered for it
}

// events names the events of a stream (its prefix, then a count from 1)
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
	r.unregister(p)
	return err
}

// register records that the requests m carries wait on x, and lets go of
// them when x is over.
func (r *router) register(m frame.Message, x Exchange) (*post, error) {
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
	}
	r.mu.Unlock()
	x.OnDone(func(unsent []frame.Message) { r.abandon(p, unsent) })
	return p, nil
}

// unregister forgets the requests of a POST the chain inside refused.
func (r *router) unregister(p *post) {
	r.mu.Lock()
	r.forgetLocked(p)
	r.mu.Unlock()
}

// forgetLocked stops waiting for p's responses (late ones are dropped) and
// routing server messages to p. The caller holds r.mu.
func (r *router) forgetLocked(p *post) {
	for _, id := range p.ids {
		if r.pending[id] == p {
			delete(r.pending, id)
		}
	}
	p.remaining = 0
	r.retire(p)
}

// abandon forgets a POST whose exchange is over (answered, or its client
// gone), and routes again the server messages it did not take.
func (r *router) abandon(p *post, unsent []frame.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(p)
	if r.closed {
		return
	}
	for _, m := range unsent {
		if !m.Kind().IsResponse() {
			r.placeLocked(m)
		}
	}
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
	q := r.pending[id]
	if q == nil || (p != nil && q != p) {
		r.mu.Unlock()
		return
	}
	delete(r.pending, id)
	q.remaining--
	done := q.remaining == 0
	if done {
		r.retire(q)
	}
	r.mu.Unlock()
	switch {
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
// once every request it carried is answered.
func (r *router) answer(m frame.Message) {
	r.mu.Lock()
	p := r.pending[m.ID()]
	done := false
	if p != nil {
		delete(r.pending, m.ID())
		p.remaining--
		if done = p.remaining == 0; done {
			r.retire(p)
		}
	}
	r.mu.Unlock()
	if p == nil {
		r.log.Debug("dropped a late response: nobody waits for it", "id", m.ID().String())
		return
	}
	send := p.x.Send
	if done {
		send = p.x.SendLast // the answer's end goes with it
	}
	if err := send(r.life, m, ""); err != nil {
		r.log.Debug("dropped a response: its client went away", "id", m.ID().String())
		if done {
			p.x.End()
		}
	}
}

// route sends a server request or notification to the first exchange
// that takes it, or keeps it for the next standalone stream.
func (r *router) route(m frame.Message) {
	var tried []Exchange
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		x := r.targetLocked(m, tried)
		if x == nil {
			r.keepLocked(m)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		err := x.Send(r.life, m, "")
		if err == nil || r.life.Err() != nil {
			return
		}
		tried = append(tried, x) // busy, or over: the next one
	}
}

// targetLocked returns the first exchange that may carry m and is not in
// tried, or nil. The caller holds r.mu.
func (r *router) targetLocked(m frame.Message, tried []Exchange) Exchange {
	ok := func(x Exchange) bool { return x != nil && !slices.Contains(tried, x) }
	if m.Method() == "notifications/progress" {
		if tok := m.Get("params.progressToken"); tok.Exists() {
			if p := r.progress[tok.Raw]; p != nil && ok(p.x) {
				return p.x
			}
		}
	}
	for _, p := range r.open {
		if ok(p.x) {
			return p.x
		}
	}
	if ok(r.get) {
		return r.get
	}
	return nil
}

// placeLocked routes m without waiting, for messages an exchange left
// behind. The caller holds r.mu.
func (r *router) placeLocked(m frame.Message) {
	var tried []Exchange
	for {
		x := r.targetLocked(m, tried)
		if x == nil {
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

// listen opens the standalone stream on a GET's exchange x, taking over
// from the one open.
func (r *router) listen(m frame.Message, x Exchange) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Refuse(http.StatusNotFound, "", frame.CodeInvalidRequest, "session not found")
	}
	var left []frame.Message
	if r.get != nil {
		left = r.get.Cut() // it ends; what it had not taken goes to x
		r.log.Info("a new GET stream takes over from the one open")
	}
	r.get = x
	x.NumberEvents(r.getEvents.name)
	for _, e := range r.replayFrom(m.Header().Get(frame.HeaderLastEventID)) {
		_ = x.Send(r.now, e.m, e.id)
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

// unlisten closes the standalone stream x: what it did not take is kept,
// ahead of anything newer.
func (r *router) unlisten(x Exchange, unsent []frame.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.get == x {
		r.get = nil
	}
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

// replayFrom returns the kept events after the one lastID names, for a
// client that reconnects with Last-Event-ID; nothing when lastID is empty
// or names no event of this stream.
func (r *router) replayFrom(lastID string) []sentEvent {
	digits, ok := strings.CutPrefix(lastID, "g")
	n, err := strconv.ParseUint(digits, 10, 64)
	if !ok || err != nil {
		return nil // not ours
	}
	run, missed := r.getEvents.after(n)
	if missed != "" {
		r.log.Warn("a resumed GET stream missed events no longer kept", "last_event_id", lastID, "oldest_kept", missed)
	}
	return run
}

// closeAll lets everything go when the connection ends: every request
// still waiting is answered with an error, and every exchange ends.
func (r *router) closeAll(cause error) {
	r.stop() // a send waiting for room gives up
	r.mu.Lock()
	r.closed = true
	pending := r.pending
	r.pending = make(map[frame.ID]*post)
	var posts []*post
	for _, p := range pending {
		if !slices.Contains(posts, p) {
			posts = append(posts, p)
		}
	}
	get := r.get
	clear(r.progress)
	r.open, r.backlog = nil, nil
	r.mu.Unlock()
	r.getEvents.mu.Lock()
	r.getEvents.sent = nil
	r.getEvents.mu.Unlock()
	for id, p := range pending {
		_ = p.x.Send(r.now, frame.ErrorResponse(id, frame.CodeGateway, "session ended: "+cause.Error()), "")
	}
	for _, p := range posts {
		p.x.End()
	}
	if get != nil {
		get.End()
	}
}
