package transport

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Bounds of an [Exchange]'s queue.
const (
	// outboxCap is how many messages an answer being written holds before
	// a sender of anything but a response waits for room: a server that
	// outpaces its client is slowed to the client's pace. The writer takes
	// the whole queue at once, so up to twice this many are in hand.
	outboxCap = 16
	// outboxMax bounds an answer's queue whatever is sent; beyond it Send
	// fails with frame.ErrBusy.
	outboxMax = 4096
)

// Exchange is one HTTP request the [HTTPServer] received and hands to its
// handler, and the answer the server writes for it: a POST's answer (one
// JSON body, or an event stream), a GET's event stream, or a DELETE's
// status. The handler, and the stages it passes the exchange to, put the
// answer's messages on it with [Exchange.Send] and say when it is complete
// with [Exchange.End]; the server writes them as they come.
//
// On serve's HTTP+SSE face ([SSEServer]) the answer to a POST travels on
// its session's stream instead: such an exchange is "carried" by the
// stream's exchange. What is sent on it is queued on the stream (as the
// stream's events, without ids); it is over once it is ended (or the
// stream is over), and the stream's writer, not the POST's handler, runs
// its OnDone functions.
//
// Its methods are safe for concurrent use.
type Exchange struct {
	method string
	sse    bool // the answer is an event stream
	// jsonOK: the client accepts a JSON answer too (a POST whose Accept
	// names both).
	jsonOK bool
	srv    *HTTPServer
	// via is the stream that carries this exchange's answer (HTTP+SSE),
	// nil for an exchange answered on its own response.
	via *Exchange
	// opening is written right after the header of a GET's stream (the
	// endpoint event of HTTP+SSE).
	opening []byte
	// plain: the stream's events carry no ids, whatever NumberEvents
	// asks. An HTTP+SSE stream cannot be resumed: a client that comes
	// back gets a new session.
	plain bool

	// naming is held while the writer takes the queue and names its
	// events, so that Cut finds every message either queued or named.
	naming sync.Mutex

	mu      sync.Mutex
	q       []outboxItem
	spare   []outboxItem  // the other half of a double buffer
	wake    chan struct{} // capacity 1: there is work for the writer
	space   chan struct{} // closed (and replaced) when the writer makes room, if asked
	wanted  bool          // a sender waits on space
	over    chan struct{} // closed when the exchange is over
	isOver  bool
	pumping bool // the answer is being written
	ended   bool
	hold    bool // the header waits for the first message
	// preferJSON: an event-stream answer that is one response alone
	// when its header would go out goes as a JSON body (PreferJSON).
	preferJSON bool
	number     func(frame.Message) string
	prime      string        // the id of the event that opens the stream, if any
	retry      time.Duration // the reconnection time it names, if positive
	onDone     []func(unsent []frame.Message)
	// On a stream that carries exchanges: those it carries, and those of
	// them that ended, which the stream's writer finishes.
	carried []*Exchange
	retired []*Exchange
}

// outboxItem is a message queued on an answer, with its event id.
type outboxItem struct {
	m  frame.Message
	id string
}

func newExchange(srv *HTTPServer, method string, sse bool) *Exchange {
	return &Exchange{
		srv:    srv,
		method: method,
		sse:    sse,
		wake:   make(chan struct{}, 1),
		over:   make(chan struct{}),
	}
}

// Method returns the HTTP method of the request: POST, GET or DELETE.
func (x *Exchange) Method() string { return x.method }

// EventStream reports whether the answer is an event stream, which can
// carry any message; a JSON answer carries only the responses to the
// POST's requests.
func (x *Exchange) EventStream() bool { return x.sse }

// Send queues m on the answer. eventID names m's event on an event stream
// ("" for none, or for the name NumberEvents gives); a JSON answer ignores
// it. The side channel of the first message the answer carries
// ([frame.Message.Header]) becomes header fields of the HTTP response.
//
// A response is queued at once. Anything else waits for room while the
// answer is being written and holds 16 messages, so that a server that
// outpaces its client is slowed down; until the answer is being written
// (the handler that was given the exchange has not returned) Send never
// waits, and refuses anything but a response with frame.ErrBusy when a
// POST's answer holds 16 messages already, since the handler may be
// waiting for the very server that is sending. Any message is refused with
// frame.ErrBusy beyond 4096 queued.
//
// Send fails with frame.ErrExchangeOver once the exchange is over or
// ended, and with ctx's error when ctx ends while it waits; with ctx done
// already it does not wait at all.
func (x *Exchange) Send(ctx context.Context, m frame.Message, eventID string) error {
	return x.send(ctx, m, eventID, false)
}

// SendLast is Send and then End, at once: the server takes m and the end
// of the answer together (a quick answer then leaves in one write, not
// two).
func (x *Exchange) SendLast(ctx context.Context, m frame.Message, eventID string) error {
	return x.send(ctx, m, eventID, true)
}

// send queues m, and ends the answer with it when last.
func (x *Exchange) send(ctx context.Context, m frame.Message, eventID string, last bool) error {
	if x.via != nil {
		return x.sendVia(ctx, m, last)
	}
	x.mu.Lock()
	for {
		switch {
		case x.isOver || x.ended:
			x.mu.Unlock()
			return frame.ErrExchangeOver
		case len(x.q) >= outboxMax:
			x.mu.Unlock()
			return frame.ErrBusy
		case m.Kind().IsResponse() || len(x.q) < outboxCap:
			x.push(m, eventID, last)
			x.mu.Unlock()
			return nil
		case !x.pumping && x.method == http.MethodPost:
			x.mu.Unlock()
			return frame.ErrBusy
		case !x.pumping:
			x.push(m, eventID, last)
			x.mu.Unlock()
			return nil
		}
		if x.space == nil {
			x.space = make(chan struct{})
		}
		x.wanted = true
		room, over := x.space, x.over
		x.mu.Unlock()
		select {
		case <-room:
		case <-over:
		case <-ctx.Done():
			return ctx.Err()
		}
		x.mu.Lock()
	}
}

// sendVia queues m on the stream that carries x, as an event without an
// id, and ends x with it when last.
func (x *Exchange) sendVia(ctx context.Context, m frame.Message, last bool) error {
	x.mu.Lock()
	over := x.isOver || x.ended
	x.mu.Unlock()
	if over {
		return frame.ErrExchangeOver
	}
	if err := x.via.send(ctx, m, "", false); err != nil {
		return err
	}
	if last {
		x.End()
	}
	return nil
}

// push queues m, ends the answer when last, and wakes the writer. The
// caller holds x.mu.
func (x *Exchange) push(m frame.Message, id string, last bool) {
	x.q = append(x.q, outboxItem{m: m, id: id})
	x.srv.cfg.Budget.Add(int64(m.Len())) // until written or dropped
	x.ended = x.ended || last
	x.notify()
}

// notify tells the writer there is work.
func (x *Exchange) notify() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// End says that the answer is complete: the server writes what is queued
// and finishes the HTTP response. A POST carrying requests stays open
// until End (or until its client goes away); so does a GET's stream.
// Calling End again does nothing.
func (x *Exchange) End() {
	x.mu.Lock()
	if x.via != nil {
		first := !x.ended && !x.isOver
		x.ended = true
		x.mu.Unlock()
		if first {
			x.via.retire(x)
		}
		return
	}
	x.ended = true
	x.notify()
	x.mu.Unlock()
}

// carry has stream x carry c's answer; it reports false when x is over or
// ended, and then c is over.
func (x *Exchange) carry(c *Exchange) bool {
	x.mu.Lock()
	ok := !x.isOver && !x.ended
	if ok {
		x.carried = append(x.carried, c)
	}
	x.mu.Unlock()
	if !ok {
		c.finish()
	}
	return ok
}

// retire hands c, an exchange x carries that has ended, to x's writer,
// which finishes it; when x is over already, its finish has finished c.
func (x *Exchange) retire(c *Exchange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := slices.Index(x.carried, c)
	if i < 0 {
		return
	}
	x.carried = slices.Delete(x.carried, i, i+1)
	x.retired = append(x.retired, c)
	x.notify()
}

// uncarry forgets c, which is over.
func (x *Exchange) uncarry(c *Exchange) {
	x.mu.Lock()
	if i := slices.Index(x.carried, c); i >= 0 {
		x.carried = slices.Delete(x.carried, i, i+1)
	}
	x.mu.Unlock()
}

// finishRetired finishes the exchanges x carried that have ended, on the
// writer's goroutine.
func (x *Exchange) finishRetired() {
	x.mu.Lock()
	done := x.retired
	x.retired = nil
	x.mu.Unlock()
	for _, c := range done {
		c.finish()
	}
}

// HoldHeader makes an event-stream answer's header wait for its first
// message however long it takes (without it, the header goes out alone
// after HTTPServerConfig.HeaderHold), so that the first message's side
// channel decides the header.
func (x *Exchange) HoldHeader() {
	if x.via != nil {
		return // the stream's header is out
	}
	x.mu.Lock()
	x.hold = true
	x.mu.Unlock()
}

// PreferJSON has a POST's answer go out as one JSON body rather than an
// event stream when the client accepts both and, by the time the header
// would go out, the answer is complete and is a single response (not a
// batch's) with nothing before it: no opening, no priming event. Any
// other answer is written as it would have been. For a stage that holds
// the answer until it knows its first message (serve's 2026-07-28 router):
// a plain JSON body costs the client and the server less than a stream of
// one event, and a cache or proxy between them takes it as it is.
func (x *Exchange) PreferJSON() {
	if x.via != nil {
		return // carried on a stream
	}
	x.mu.Lock()
	x.preferJSON = true
	x.mu.Unlock()
}

// NumberEvents has name give the event id of each message sent without
// one, at the moment the server takes it for writing: a message that is
// never taken (see OnDone and Cut) is never named. name is called one
// message at a time, while Cut waits; it must not call Cut. The events of
// an HTTP+SSE stream, and of the exchanges it carries, have no ids: there
// this does nothing.
func (x *Exchange) NumberEvents(name func(frame.Message) string) {
	if x.via != nil || x.plain {
		return
	}
	x.mu.Lock()
	x.number = name
	x.mu.Unlock()
}

// Prime has an event-stream answer open with an event named eventID that
// carries no message (a data field with nothing in it) and, when retry is
// positive, asks the client to wait retry before it reconnects (a retry
// field): a client that loses the stream before any message came can
// resume it from that id. The event goes out with the header; a POST's
// header still waits for the first message up to HeaderHold, so a quick
// answer leaves in one write with it.
//
// The streams of HTTP+SSE, and the exchanges they carry, are not primed:
// their events have no ids, and a client that comes back gets a new
// session.
func (x *Exchange) Prime(eventID string, retry time.Duration) {
	if x.via != nil || x.plain {
		return
	}
	x.mu.Lock()
	x.prime, x.retry = eventID, retry
	x.mu.Unlock()
}

// Cut ends the answer at once and returns, in order, the messages queued
// on it and not taken for writing yet; they are not written here (nor
// reported unsent to OnDone). A message the server took before Cut has
// been named (see NumberEvents) by the time Cut returns: every message is
// either handed back or named. The server writes what it had taken and
// finishes the response. Once the exchange is over, Cut returns nil. An
// exchange a stream carries holds nothing of its own (what was sent on it
// is the stream's): Cut ends it and returns nil.
func (x *Exchange) Cut() []frame.Message {
	if x.via != nil {
		x.End()
		return nil
	}
	x.naming.Lock()
	defer x.naming.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.isOver {
		return nil
	}
	var back []frame.Message
	if len(x.q) > 0 {
		back = make([]frame.Message, len(x.q))
		for i, it := range x.q {
			back[i] = it.m
		}
		x.release(x.q) // whoever takes them counts them again
		clear(x.q)
		x.q = x.q[:0]
	}
	x.ended = true
	if x.wanted { // a sender waiting for room learns that the answer ended
		close(x.space)
		x.space, x.wanted = nil, false
	}
	x.notify()
	return back
}

// release gives back to the budget the bytes of items, which were queued
// and will not be written.
func (x *Exchange) release(items []outboxItem) {
	for _, it := range items {
		x.srv.cfg.Budget.Release(int64(it.m.Len()))
	}
}

// OnDone has f run once the exchange is over — its answer written, or its
// client gone — with the messages that were queued and never taken for
// writing (nor handed back by Cut). f runs on the server's goroutine for
// the request, never inside a call of another method of the exchange; if
// the exchange is over already, f runs at once.
func (x *Exchange) OnDone(f func(unsent []frame.Message)) {
	x.mu.Lock()
	if !x.isOver {
		x.onDone = append(x.onDone, f)
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	f(nil)
}

// take hands the queued messages to the writer, each with its event id
// (named now when NumberEvents asked for it), makes room, and reports
// whether the answer is complete. The slice is valid until the next take.
func (x *Exchange) take() ([]outboxItem, bool) {
	x.naming.Lock()
	defer x.naming.Unlock()
	x.mu.Lock()
	items := x.q
	x.q = x.spare[:0]
	x.spare = items
	if x.wanted {
		close(x.space)
		x.space, x.wanted = nil, false
	}
	ended, number := x.ended, x.number
	x.mu.Unlock()
	if number != nil {
		for i := range items {
			if items[i].id == "" {
				items[i].id = number(items[i].m)
			}
		}
	}
	return items, ended
}

// finish makes the exchange over and runs the OnDone functions: first
// those of the exchanges it carries, which are over with it.
func (x *Exchange) finish() {
	x.mu.Lock()
	if x.isOver {
		x.mu.Unlock()
		return
	}
	x.isOver = true
	close(x.over)
	var unsent []frame.Message
	for _, it := range x.q {
		unsent = append(unsent, it.m)
		x.srv.cfg.Budget.Release(int64(it.m.Len()))
	}
	x.q, x.spare = nil, nil
	hooks := x.onDone
	x.onDone = nil
	carried := append(x.retired, x.carried...) // in the order they ended, then came
	x.carried, x.retired = nil, nil
	x.mu.Unlock()
	if x.via != nil {
		x.via.uncarry(x)
	}
	for _, c := range carried {
		c.finish()
	}
	for _, f := range hooks {
		f(unsent)
	}
}

// writeSSE writes an event-stream answer until the exchange ends or its
// client goes away, and reports whether it was written whole. A POST's
// answer holds its header for the first message up to HeaderHold (or for
// good, see HoldHeader); a GET's stream sends its header at once. Each
// batch of messages is flushed but the last of a POST's answer, which
// net/http sends with the end of the response. A stream that stays silent
// gets a comment every KeepAlive.
func (x *Exchange) writeSSE(w http.ResponseWriter, r *http.Request) bool {
	x.mu.Lock()
	x.pumping = true
	hold, prime, retry := x.hold, x.prime, x.retry
	x.mu.Unlock()
	rc := http.NewResponseController(w)
	headerSent := false
	// sendHeader writes the header, then the opening (HTTP+SSE's endpoint
	// event) and the priming event if there are.
	sendHeader := func(first frame.Message) error {
		writeHeader(w, first.Header(), "text/event-stream")
		headerSent = true
		if x.opening != nil {
			if _, err := w.Write(x.opening); err != nil {
				return err
			}
		}
		if prime == "" {
			return nil
		}
		return writePrime(w, prime, retry)
	}
	// tick fires when the header must go out alone, then every KeepAlive.
	var tick <-chan time.Time
	var timer *time.Timer
	switch {
	case x.method == http.MethodGet:
		if sendHeader(frame.Message{}) != nil || rc.Flush() != nil {
			return false
		}
		if ka := x.srv.cfg.KeepAlive; ka > 0 {
			timer = time.NewTimer(ka)
		}
	case !hold:
		timer = time.NewTimer(x.srv.cfg.HeaderHold)
	}
	if timer != nil {
		defer timer.Stop()
		tick = timer.C
	}
	wrote := false // since the last tick
	for {
		x.finishRetired()
		items, ended := x.take()
		if !headerSent && ended && x.answersAsJSON(items, prime) {
			err := writeJSONAnswer(w, []frame.Message{items[0].m}, false)
			x.release(items)
			clear(items)
			return err == nil
		}
		for i, it := range items {
			if !headerSent && sendHeader(it.m) != nil {
				x.release(items[i:])
				clear(items)
				return false
			}
			if frame.WriteSSE(w, it.id, "message", it.m.Bytes()) != nil {
				x.release(items[i:])
				clear(items)
				return false
			}
			x.srv.cfg.Budget.Release(int64(it.m.Len()))
			wrote = true
			items[i] = outboxItem{}
		}
		if ended {
			break
		}
		if len(items) > 0 && rc.Flush() != nil {
			return false
		}
		select {
		case <-x.wake:
		case <-tick:
			switch {
			case !headerSent:
				if sendHeader(frame.Message{}) != nil || rc.Flush() != nil {
					return false
				}
			case !wrote:
				if writeKeepAlive(w, rc) != nil {
					return false
				}
			}
			wrote = false
			if ka := x.srv.cfg.KeepAlive; ka > 0 {
				timer.Reset(ka)
			} else {
				tick = nil
			}
		case <-r.Context().Done():
			return false
		}
	}
	if !headerSent { // ended before any message: every request was cancelled
		if sendHeader(frame.Message{}) != nil {
			return false
		}
	}
	if x.method == http.MethodGet {
		_ = rc.Flush()
	}
	return true
}

// answersAsJSON reports whether an event-stream answer whose header has
// not gone out, complete with items, goes as a JSON body instead (see
// PreferJSON).
func (x *Exchange) answersAsJSON(items []outboxItem, prime string) bool {
	if len(items) != 1 || !items[0].m.Kind().IsResponse() || prime != "" || x.opening != nil || !x.jsonOK || x.method != http.MethodPost {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.preferJSON
}

// writeJSON collects the answer's messages until the exchange ends and
// writes them as one JSON body: the one response, or an array for a batch.
// It reports whether the answer was written.
func (x *Exchange) writeJSON(w http.ResponseWriter, r *http.Request, batch bool) bool {
	x.mu.Lock()
	x.pumping = true
	x.mu.Unlock()
	var collected []frame.Message
	defer func() {
		for _, m := range collected {
			x.srv.cfg.Budget.Release(int64(m.Len()))
		}
	}()
	for {
		items, ended := x.take()
		for i, it := range items {
			collected = append(collected, it.m)
			items[i] = outboxItem{}
		}
		if ended {
			break
		}
		select {
		case <-x.wake:
		case <-r.Context().Done():
			return false
		}
	}
	return writeJSONAnswer(w, collected, batch) == nil
}

// writeHeader writes the header of an answer: the fields of side (a
// message's side channel), then Content-Type, and the status 200.
func writeHeader(w http.ResponseWriter, side http.Header, contentType string) {
	h := w.Header()
	for k, v := range side {
		h[k] = v
	}
	h.Set("Content-Type", contentType)
	if contentType == "text/event-stream" {
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(http.StatusOK)
}

// writePrime writes a priming event: an id, the reconnection time when
// retry is positive, and a data field with nothing in it.
func writePrime(w io.Writer, id string, retry time.Duration) error {
	b := make([]byte, 0, 32+len(id))
	b = append(b, "id: "...)
	b = append(b, id...)
	if retry > 0 {
		b = append(b, "\nretry: "...)
		b = strconv.AppendInt(b, retry.Milliseconds(), 10)
	}
	b = append(b, "\ndata:\n\n"...)
	_, err := w.Write(b)
	return err
}

// keepAliveComment is what a silent event stream gets every KeepAlive.
const keepAliveComment = ": keepalive\n\n"

// writeKeepAlive writes keepAliveComment and flushes it.
func writeKeepAlive(w http.ResponseWriter, rc *http.ResponseController) error {
	if _, err := io.WriteString(w, keepAliveComment); err != nil {
		return err
	}
	return rc.Flush()
}

// writeJSONAnswer writes the JSON answer of a POST: the one response, or
// the array of a batch's responses. The first message's side channel
// gives header fields.
func writeJSONAnswer(w http.ResponseWriter, msgs []frame.Message, batch bool) error {
	var side http.Header
	if len(msgs) > 0 {
		side = msgs[0].Header()
	}
	h := w.Header()
	if !batch && len(msgs) == 1 {
		h.Set("Content-Length", strconv.Itoa(msgs[0].Len()))
		writeHeader(w, side, "application/json")
		_, err := w.Write(msgs[0].Bytes())
		return err
	}
	n := 1 + len(msgs)
	for _, m := range msgs {
		n += m.Len()
	}
	if len(msgs) == 0 {
		n++
	}
	h.Set("Content-Length", strconv.Itoa(n))
	writeHeader(w, side, "application/json")
	if _, err := w.Write([]byte{'['}); err != nil {
		return err
	}
	for i, m := range msgs {
		if i > 0 {
			if _, err := w.Write([]byte{','}); err != nil {
				return err
			}
		}
		if _, err := w.Write(m.Bytes()); err != nil {
			return err
		}
	}
	_, err := w.Write([]byte{']'})
	return err
}

// acceptsPOST reads a POST's Accept header: sse when text/event-stream is
// named outright, json when application/json is acceptable (named, through
// a wildcard, or with no Accept at all). A q of 0 excludes a type.
func acceptsPOST(values []string) (sse, json bool) {
	if len(values) == 0 {
		return false, true
	}
	for typ, sub := range mediaRanges(values) {
		switch {
		case typ == "text" && sub == "event-stream":
			sse = true
		case typ == "application" && (sub == "json" || sub == "*"), typ == "*":
			json = true
		}
	}
	return sse, json
}

// acceptsGET reports whether a GET's Accept allows an event stream.
func acceptsGET(values []string) bool {
	if len(values) == 0 {
		return true
	}
	for typ, sub := range mediaRanges(values) {
		if typ == "*" || typ == "text" && (sub == "event-stream" || sub == "*") {
			return true
		}
	}
	return false
}

// mediaRanges yields the lower-cased type and subtype of every media range
// in Accept header values whose q is not zero.
func mediaRanges(values []string) func(yield func(typ, sub string) bool) {
	return func(yield func(typ, sub string) bool) {
		for _, v := range values {
			for part := range strings.SplitSeq(v, ",") {
				mr, params, _ := strings.Cut(part, ";")
				if zeroQ(params) {
					continue
				}
				typ, sub, _ := strings.Cut(strings.TrimSpace(mr), "/")
				if !yield(strings.ToLower(strings.TrimSpace(typ)), strings.ToLower(strings.TrimSpace(sub))) {
					return
				}
			}
		}
	}
}

// zeroQ reports whether media-range parameters carry q=0.
func zeroQ(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q <= 0
	}
	return false
}
