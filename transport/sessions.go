package transport

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

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/tidwall/gjson"
)

// httpSession is one session of an [HTTPServer]: its backend, the streams
// open to its client, and the routing of everything the server sends
// between them. It is the backend's Sink.
//
// Routing of a server message, in order:
//   - a response goes to the POST waiting for its raw id, or is dropped
//     (its client went away; a disconnect is not a cancel in this era);
//   - notifications/progress goes to the POST stream that registered its
//     progressToken;
//   - any other request or notification goes to the oldest POST event
//     stream still open, else the GET stream, else a bounded backlog that
//     the next GET stream receives first.
type httpSession struct {
	srv     *HTTPServer
	id      string
	log     *slog.Logger
	backend Backend
	ctx     context.Context // ends when the session closes
	cancel  context.CancelFunc

	mu       sync.Mutex
	closed   bool
	pending  map[frame.ID]*postStream // requests awaiting their response
	orphans  map[frame.ID]struct{}    // requests whose client went away, still at the server
	progress map[string]*postStream   // raw progressToken → its POST stream
	open     []*postStream            // SSE POSTs that may carry server messages, oldest first
	get      *outbox                  // the standalone GET stream, if open
	backlog  []frame.Message
	// The GET stream's events carry ids "g1", "g2", … (getSeq is the
	// last); sent keeps the latest of them for a client that reconnects
	// with Last-Event-ID (see replayFrom).
	getSeq   uint64
	sent     []sentEvent
	active   int // POSTs, GETs and DELETEs in progress
	idleGen  uint64
	idleStop func() bool

	closeOnce sync.Once
	done      chan struct{}
}

// shortIDLen is how much of a session id names it in logs.
const shortIDLen = 8

// ShortSessionID returns the abbreviation of a session id used in logs and
// in the prefix of the child's stderr lines.
func ShortSessionID(id string) string {
	if len(id) > shortIDLen {
		return id[:shortIDLen]
	}
	return id
}

func newHTTPSession(srv *HTTPServer, id string) *httpSession {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpSession{
		srv:      srv,
		id:       id,
		log:      srv.log.With("session", ShortSessionID(id)),
		ctx:      ctx,
		cancel:   cancel,
		pending:  make(map[frame.ID]*postStream),
		orphans:  make(map[frame.ID]struct{}),
		progress: make(map[string]*postStream),
		done:     make(chan struct{}),
	}
}

// Handle routes one message from the server to the client. It waits while
// the chosen stream's outbox is full, which slows this session's server
// down to its client's pace; it never fails (a message nobody can take is
// dropped or kept in the backlog).
func (ss *httpSession) Handle(ctx context.Context, m frame.Message) error {
	if m.Kind() == frame.Invalid {
		ss.log.Warn("dropped a server message that is not JSON-RPC")
		return nil
	}
	for {
		ss.mu.Lock()
		if ss.closed {
			ss.mu.Unlock()
			return nil
		}
		ob, ps, ok := ss.target(m)
		switch {
		case !ok:
			_, orphan := ss.orphans[m.ID()]
			delete(ss.orphans, m.ID())
			ss.mu.Unlock()
			if orphan {
				ss.log.Debug("dropped a late response: its client went away", "id", m.ID().String())
			} else {
				ss.log.Debug("dropped a response nobody waits for", "id", m.ID().String())
			}
			return nil
		case ob == nil:
			ss.keep(m)
			ss.mu.Unlock()
			return nil
		case !ob.full() || ps != nil && !ps.pumping:
			// A POST whose handler is still writing its request to the
			// server never makes the server wait: that could be the
			// server waiting for us while we wait for it.
			ob.push(m)
			if ps != nil && m.Kind().IsResponse() {
				ss.answered(ps, m.ID())
			}
			ss.mu.Unlock()
			return nil
		}
		room, gone := ob.roomSignal(), ob.gone
		ss.mu.Unlock()
		select {
		case <-room:
		case <-gone:
		case <-ss.ctx.Done():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// target picks the outbox for m: ok is false for a response nobody waits
// for, ob is nil for the backlog, ps is the POST stream when ob is one. A
// POST stream that is full and not yet being written is passed over for
// anything but its own responses. The caller holds ss.mu.
func (ss *httpSession) target(m frame.Message) (ob *outbox, ps *postStream, ok bool) {
	if m.Kind().IsResponse() {
		ps = ss.pending[m.ID()]
		if ps == nil {
			return nil, nil, false
		}
		return &ps.outbox, ps, true
	}
	if m.Method() == "notifications/progress" {
		if tok := m.Get("params.progressToken"); tok.Exists() {
			if p := ss.progress[tok.Raw]; p != nil && (p.pumping || !p.full()) {
				return &p.outbox, p, true
			}
		}
	}
	for _, p := range ss.open {
		if p.pumping || !p.full() {
			return &p.outbox, p, true
		}
	}
	if ss.get != nil {
		return ss.get, nil, true
	}
	return nil, nil, true
}

// place routes m without waiting for room, for messages a departing
// writer left behind. The caller holds ss.mu.
func (ss *httpSession) place(m frame.Message) {
	ob, _, ok := ss.target(m)
	switch {
	case !ok || m.Kind().IsResponse():
	case ob == nil:
		ss.keep(m)
	default:
		ob.push(m)
	}
}

// keep adds m to the backlog, dropping the oldest message when it is full.
// The caller holds ss.mu.
func (ss *httpSession) keep(m frame.Message) {
	if len(ss.backlog) >= ss.srv.cfg.Backlog {
		ss.log.Warn("backlog full: dropped the oldest server message waiting for a stream", "method", ss.backlog[0].Method(), "max", ss.srv.cfg.Backlog)
		ss.backlog[0] = frame.Message{}
		ss.backlog = ss.backlog[1:]
	}
	ss.backlog = append(ss.backlog, m)
}

// answered records that the response to id is queued on ps. The caller
// holds ss.mu.
func (ss *httpSession) answered(ps *postStream, id frame.ID) {
	delete(ss.pending, id)
	ps.remaining--
	if ps.remaining == 0 {
		ss.retire(ps)
	}
}

// retire stops routing server messages to ps. The caller holds ss.mu.
func (ss *httpSession) retire(ps *postStream) {
	if i := slices.Index(ss.open, ps); i >= 0 {
		ss.open = slices.Delete(ss.open, i, i+1)
	}
	for _, t := range ps.tokens {
		if ss.progress[t] == ps {
			delete(ss.progress, t)
		}
	}
	ps.tokens = nil
}

// errDuplicateID refuses a request whose id is already waiting, or whose
// id an abandoned request still holds at the server (its late response
// would be taken for the answer).
var errDuplicateID = errors.New("invalid request: a request with this id is already in progress")

// orphanMax bounds the abandoned request ids a session remembers.
const orphanMax = 1024

// errSessionGone means the session ended under a request.
var errSessionGone = errors.New("session not found")

// register sets up the answer of a POST carrying requests.
func (ss *httpSession) register(msgs []frame.Message, sse, isInit bool) (*postStream, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, errSessionGone
	}
	ps := &postStream{outbox: newOutbox(), sse: sse, isInit: isInit}
	for _, m := range msgs {
		if m.Kind() != frame.Request {
			continue
		}
		_, dup := ss.pending[m.ID()]
		_, orphan := ss.orphans[m.ID()]
		if dup || orphan {
			for _, id := range ps.ids {
				delete(ss.pending, id)
			}
			ss.retire(ps)
			return nil, errDuplicateID
		}
		ss.pending[m.ID()] = ps
		ps.ids = append(ps.ids, m.ID())
		ps.remaining++
		if !sse {
			continue
		}
		if len(ps.ids) == 1 {
			ss.open = append(ss.open, ps)
		}
		tok := m.Get("params._meta.progressToken")
		if tok.Type != gjson.String && tok.Type != gjson.Number {
			continue
		}
		if _, taken := ss.progress[tok.Raw]; !taken {
			ss.progress[tok.Raw] = ps
			ps.tokens = append(ps.tokens, tok.Raw)
		}
	}
	return ps, nil
}

// abandon forgets a POST whose client went away (or whose requests could
// not be delivered): server messages it had not written are routed again,
// and, when its requests reached the server (sent), their late responses
// will be dropped.
func (ss *httpSession) abandon(ps *postStream, sent bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, id := range ps.ids {
		if ss.pending[id] != ps {
			continue
		}
		delete(ss.pending, id)
		if sent && len(ss.orphans) < orphanMax {
			ss.orphans[id] = struct{}{}
		}
	}
	ss.retire(ps)
	ps.remaining = 0
	for _, m := range ps.stop() {
		if !ss.closed {
			ss.place(m)
		}
	}
}

// forgetCancelled handles a client's notifications/cancelled on its way to
// the server. The server need not answer a cancelled request (and the MCP
// servers we know don't), so nothing waits for that answer any more: an
// abandoned request's id is freed, and a request still waiting on its POST
// is finished there — an SSE answer simply ends without it, a JSON answer
// carries a "request cancelled" error in its place (the client, which
// cancelled, ignores it). A late answer is dropped.
func (ss *httpSession) forgetCancelled(m frame.Message) {
	if m.Method() != "notifications/cancelled" {
		return
	}
	id := frame.ID(m.Get("params.requestId").Raw)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.orphans, id)
	ps := ss.pending[id]
	if ps == nil {
		return
	}
	if !ps.sse {
		ps.push(frame.ErrorResponse(id, frame.CodeGateway, "request cancelled"))
	}
	ss.answered(ps, id)
	ps.notify()
}

// post answers a POST of msgs on this session. An SSE POST is open to the
// server's own messages from the moment it is registered, before its
// requests are written to the server, so that whatever the server sends
// while handling them is on the POST's stream.
func (ss *httpSession) post(w http.ResponseWriter, r *http.Request, msgs []frame.Message, batch, isInit, sse bool) {
	if !ss.begin() {
		writeRPCError(w, http.StatusNotFound, msgs[0].ID(), frame.CodeInvalidRequest, "session not found")
		return
	}
	defer ss.end()
	hasRequest := slices.ContainsFunc(msgs, frame.Message.IsRequest)
	if !hasRequest {
		for _, m := range msgs {
			ss.forgetCancelled(m)
			if err := ss.backend.Handle(r.Context(), m); err != nil {
				ss.deliveryFailed(w, "", false, err)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	firstID := msgs[slices.IndexFunc(msgs, frame.Message.IsRequest)].ID()
	if !ss.srv.beginRequest() {
		writeRPCError(w, http.StatusServiceUnavailable, firstID, frame.CodeGateway, "the gateway is shutting down")
		if isInit {
			ss.close(context.WithoutCancel(r.Context()), "the gateway is shutting down")
		}
		return
	}
	defer ss.srv.endRequest()
	ps, err := ss.register(msgs, sse, isInit)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errSessionGone) {
			status = http.StatusNotFound
		}
		writeRPCError(w, status, firstID, frame.CodeInvalidRequest, err.Error())
		return
	}
	for _, m := range msgs {
		ss.forgetCancelled(m)
		if err := ss.backend.Handle(r.Context(), m); err != nil {
			ss.abandon(ps, false)
			ss.deliveryFailed(w, firstID, isInit, err)
			if isInit {
				ss.close(context.WithoutCancel(r.Context()), "its server could not be started")
			}
			return
		}
	}
	if !ss.answer(w, r, ps, batch) {
		ss.abandon(ps, true)
	}
	if isInit && !ps.initOK {
		ss.close(context.WithoutCancel(r.Context()), "initialize failed")
	}
}

// deliveryFailed answers a POST whose message could not be handed to the
// backend.
func (ss *httpSession) deliveryFailed(w http.ResponseWriter, id frame.ID, isInit bool, err error) {
	ss.log.Debug("could not deliver a client message", "err", err)
	ss.mu.Lock()
	closed := ss.closed
	ss.mu.Unlock()
	if !isInit && (closed || errors.Is(err, ErrChildExited)) {
		writeRPCError(w, http.StatusNotFound, id, frame.CodeInvalidRequest, "session not found")
		return
	}
	writeRPCError(w, http.StatusBadGateway, id, frame.CodeGateway, "the server could not take the message: "+err.Error())
}

// answer writes what is routed to ps until every response is written. It
// reports false when the client went away first. An SSE answer's header
// waits for the first message up to HeaderHold; the answer is flushed after
// each batch of messages but the last: once every response is written, the
// handler returns and net/http sends what is buffered together with the
// end of the stream.
func (ss *httpSession) answer(w http.ResponseWriter, r *http.Request, ps *postStream, batch bool) bool {
	ss.mu.Lock()
	ps.pumping = true
	ss.mu.Unlock()
	rc := http.NewResponseController(w)
	headerSent := false
	var collected []frame.Message // JSON mode: the responses
	sendHeader := func(first frame.Message) {
		sid := ""
		if !ps.isInit || first.Kind() != frame.Error {
			sid = ss.initSessionID(ps)
		}
		writeSSEHeader(w, sid)
		headerSent = true
	}
	// tick fires when the header must go out alone, then every KeepAlive.
	var tick <-chan time.Time
	var ticker *time.Timer
	wrote := false // since the last tick
	if ps.sse && !ps.isInit {
		ticker = time.NewTimer(ss.srv.cfg.HeaderHold)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		ss.mu.Lock()
		msgs := ps.take()
		finished := ps.remaining == 0
		ss.mu.Unlock()
		for i, m := range msgs {
			if ps.isInit && m.Kind().IsResponse() {
				ps.initOK = m.Kind() == frame.Result
			}
			if !ps.sse {
				collected = append(collected, m)
				msgs[i] = frame.Message{}
				continue
			}
			if !headerSent {
				sendHeader(m)
			}
			if err := writeEvent(w, m); err != nil {
				clear(msgs)
				ps.initOK = false
				return false
			}
			wrote = true
			msgs[i] = frame.Message{}
		}
		if finished {
			break
		}
		if ps.sse && len(msgs) > 0 && rc.Flush() != nil {
			ps.initOK = false
			return false
		}
		select {
		case <-ps.wake:
		case <-tick:
			switch {
			case !headerSent:
				sendHeader(frame.Message{})
				if rc.Flush() != nil {
					return false
				}
			case !wrote:
				if writeKeepAlive(w, rc) != nil {
					return false
				}
			}
			wrote = false
			if ka := ss.srv.cfg.KeepAlive; ka > 0 {
				ticker.Reset(ka)
			} else {
				tick = nil
			}
		case <-r.Context().Done():
			ps.initOK = false
			return false
		}
	}
	if ps.sse {
		if !headerSent { // every request was cancelled before an answer
			sendHeader(frame.Message{})
		}
		return true
	}
	sid := ""
	if ps.initOK {
		sid = ss.initSessionID(ps)
	}
	if err := writeJSONAnswer(w, collected, batch, sid); err != nil {
		ps.initOK = false
		return false
	}
	return true
}

// initSessionID returns the session id for an initialize's answer, "" for
// other POSTs.
func (ss *httpSession) initSessionID(ps *postStream) string {
	if ps.isInit {
		return ss.id
	}
	return ""
}

// listen serves the session's GET stream until the client leaves or the
// session ends.
func (ss *httpSession) listen(w http.ResponseWriter, r *http.Request) {
	if !ss.begin() {
		writeRPCError(w, http.StatusNotFound, "", frame.CodeInvalidRequest, "session not found")
		return
	}
	defer ss.end()
	ss.mu.Lock()
	if ss.get != nil {
		ss.mu.Unlock()
		writeRPCError(w, http.StatusConflict, "", frame.CodeInvalidRequest, "Conflict: the session's stream is already open")
		return
	}
	ob := newOutbox()
	replay := ss.replayFrom(r.Header.Get(frame.HeaderLastEventID))
	ob.q, ss.backlog = ss.backlog, nil // what waited goes first
	ss.get = &ob
	ss.mu.Unlock()

	defer func() {
		ss.mu.Lock()
		if ss.get == &ob {
			ss.get = nil
		}
		left := ob.stop()
		if !ss.closed && len(left) > 0 {
			// Not written: keep them, ahead of anything newer.
			backlog := ss.backlog
			ss.backlog = nil
			for _, m := range left {
				ss.keep(m)
			}
			for _, m := range backlog {
				ss.keep(m)
			}
		}
		ss.mu.Unlock()
	}()

	rc := http.NewResponseController(w)
	writeSSEHeader(w, "")
	if rc.Flush() != nil {
		return
	}
	var tick <-chan time.Time
	if ka := ss.srv.cfg.KeepAlive; ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	wrote := false // since the last tick
	for _, e := range replay {
		if writeIDEvent(w, e.id, e.m) != nil {
			return
		}
		wrote = true
	}
	if len(replay) > 0 && rc.Flush() != nil {
		return
	}
	var ids []string
	for {
		ss.mu.Lock()
		msgs := ob.take()
		closed := ss.closed
		ids = ss.numberSent(msgs, ids[:0])
		ss.mu.Unlock()
		for i, m := range msgs {
			if writeIDEvent(w, ids[i], m) != nil {
				clear(msgs)
				return
			}
			wrote = true
			msgs[i] = frame.Message{}
		}
		if len(msgs) > 0 && rc.Flush() != nil {
			return
		}
		if closed {
			return
		}
		select {
		case <-ob.wake:
		case <-tick:
			if !wrote && writeKeepAlive(w, rc) != nil {
				return
			}
			wrote = false
		case <-r.Context().Done():
			return
		}
	}
}

// begin counts an HTTP exchange with the session, which keeps it from
// idling out; it fails once the session is closed.
func (ss *httpSession) begin() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	ss.active++
	if ss.idleStop != nil {
		ss.idleStop()
		ss.idleStop = nil
	}
	return true
}

// end ends what begin began; the last one out starts the idle timer.
func (ss *httpSession) end() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.active--
	if ss.active > 0 || ss.closed || ss.srv.cfg.IdleTimeout <= 0 {
		return
	}
	ss.idleGen++
	gen := ss.idleGen
	ss.idleStop = ss.srv.cfg.AfterFunc(ss.srv.cfg.IdleTimeout, func() { ss.idleFired(gen) })
}

// idleFired ends the session if nothing happened since the timer started.
func (ss *httpSession) idleFired(gen uint64) {
	ss.mu.Lock()
	idle := !ss.closed && ss.active == 0 && ss.idleGen == gen
	ss.mu.Unlock()
	if idle {
		ss.close(context.Background(), "idle timeout")
	}
}

// watch ends the session when its backend ends on its own.
func (ss *httpSession) watch() {
	select {
	case <-ss.backend.Done():
		ss.close(context.Background(), "the server process exited")
	case <-ss.ctx.Done():
	}
}

// close ends the session: its id is forgotten (404 from now on), requests
// still waiting are answered with an error, its streams end, and its
// backend is closed. It returns when that is done or ctx ends; the first
// caller's ctx bounds the backend's shutdown.
func (ss *httpSession) close(ctx context.Context, reason string) {
	ss.closeOnce.Do(func() {
		ss.srv.forget(ss)
		ss.mu.Lock()
		ss.closed = true
		if ss.idleStop != nil {
			ss.idleStop()
			ss.idleStop = nil
		}
		for id, ps := range ss.pending {
			ps.push(frame.ErrorResponse(id, frame.CodeGateway, "session ended: "+reason))
			ps.remaining--
		}
		clear(ss.pending)
		clear(ss.progress)
		ss.open = nil
		ss.backlog = nil
		if ss.get != nil {
			ss.get.notify()
		}
		ss.mu.Unlock()
		ss.cancel()
		ss.log.Info("session closed", "reason", reason)
		if ss.backend != nil {
			if err := ss.backend.Close(ctx); err != nil {
				ss.log.Warn("closing the session's server", "err", err)
			}
		}
		close(ss.done)
	})
	select {
	case <-ss.done:
	case <-ctx.Done():
	}
}

// sentEvent is an event the GET stream carried, kept for a reconnect.
type sentEvent struct {
	id string
	m  frame.Message
}

// keptEvents bounds the GET stream events a session keeps for clients that
// reconnect with Last-Event-ID.
const keptEvents = 256

// numberSent gives the GET stream's next events their ids, appended to ids,
// and keeps them (the oldest beyond keptEvents are forgotten). An event is
// kept before it is written: one the connection broke on is sent again to a
// client that resumes from before it. The caller holds ss.mu.
func (ss *httpSession) numberSent(msgs []frame.Message, ids []string) []string {
	for _, m := range msgs {
		ss.getSeq++
		id := "g" + strconv.FormatUint(ss.getSeq, 10)
		ids = append(ids, id)
		if len(ss.sent) >= keptEvents {
			ss.sent[0] = sentEvent{}
			ss.sent = ss.sent[1:]
		}
		ss.sent = append(ss.sent, sentEvent{id: id, m: m})
	}
	return ids
}

// replayFrom returns the kept GET stream events after the one lastID names,
// for a client that reconnects with Last-Event-ID; nothing when lastID is
// empty or names no event of this session's GET stream. The caller holds
// ss.mu.
func (ss *httpSession) replayFrom(lastID string) []sentEvent {
	digits, ok := strings.CutPrefix(lastID, "g")
	n, err := strconv.ParseUint(digits, 10, 64)
	if !ok || err != nil || n >= ss.getSeq || len(ss.sent) == 0 {
		return nil // not ours, or nothing after it
	}
	first := ss.getSeq - uint64(len(ss.sent)) + 1 // the id number of sent[0]
	if n+1 < first {
		ss.log.Warn("a resumed GET stream missed events no longer kept", "last_event_id", lastID, "oldest_kept", "g"+strconv.FormatUint(first, 10))
		n = first - 1
	}
	return slices.Clone(ss.sent[n+1-first:])
}
