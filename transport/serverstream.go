package transport

import (
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// outboxCap bounds the messages waiting in one stream's outbox. A server
// that outpaces its client waits for room (backpressure on that session's
// child only); the writer takes the whole queue at once, so up to twice
// this many are in hand.
const outboxCap = 16

// outbox is the client-bound queue of one HTTP response (a POST's answer or
// the GET stream). The session's router fills it; the handler goroutine
// that owns the ResponseWriter empties it. Every field is guarded by the
// session's mutex, except that the channels are used outside it.
type outbox struct {
	q     []frame.Message
	spare []frame.Message // the other half of a double buffer
	wake  chan struct{}   // capacity 1: there is work for the writer
	// space is closed (and replaced) when the writer makes room, if a
	// sender asked for it; a sender waits on it when q is full.
	space       chan struct{}
	spaceWanted bool
	gone        chan struct{} // closed when the writer has stopped
	stopped     bool
}

func newOutbox() outbox {
	return outbox{wake: make(chan struct{}, 1), gone: make(chan struct{})}
}

// notify tells the writer there is work (or that the session ended).
func (o *outbox) notify() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// full reports whether a sender should wait for room.
func (o *outbox) full() bool { return len(o.q) >= outboxCap }

// push queues m (whatever the length) and wakes the writer.
func (o *outbox) push(m frame.Message) {
	o.q = append(o.q, m)
	o.notify()
}

// roomSignal returns a channel that is closed when the writer next makes
// room.
func (o *outbox) roomSignal() <-chan struct{} {
	if o.space == nil {
		o.space = make(chan struct{})
	}
	o.spaceWanted = true
	return o.space
}

// take hands the queued messages to the writer and makes room. The slice
// is valid until the next take; the writer clears it when done.
func (o *outbox) take() []frame.Message {
	msgs := o.q
	o.q = o.spare[:0]
	o.spare = msgs
	if o.spaceWanted {
		close(o.space)
		o.space = nil
		o.spaceWanted = false
	}
	return msgs
}

// stop marks the writer gone and returns what it left unwritten.
func (o *outbox) stop() []frame.Message {
	left := o.q
	o.q, o.spare = nil, nil
	if !o.stopped {
		o.stopped = true
		close(o.gone)
	}
	return left
}

// postStream is the answer of one POST carrying requests: the ids it waits
// for and, in SSE mode, the progress tokens that route to it.
type postStream struct {
	outbox
	ids       []frame.ID
	tokens    []string // raw progressToken values registered for it
	remaining int      // responses not yet queued
	sse       bool
	isInit    bool
	pumping   bool // its handler is writing what is routed to it
	initOK    bool // an initialize's response was a result and was written
}

// writeSSEHeader starts an event stream answer.
func writeSSEHeader(w http.ResponseWriter, sessionID string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if sessionID != "" {
		h.Set(frame.HeaderSessionID, sessionID)
	}
	w.WriteHeader(http.StatusOK)
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

// writeEvent writes one message as an SSE event.
func writeEvent(w http.ResponseWriter, m frame.Message) error {
	return writeIDEvent(w, "", m)
}

// writeIDEvent writes one message as an SSE event with the given id ("" for
// none).
func writeIDEvent(w http.ResponseWriter, id string, m frame.Message) error {
	return frame.WriteSSE(w, id, "message", m.Bytes())
}

// writeJSONAnswer writes the JSON answer of a POST: the one response, or
// the array of a batch's responses.
func writeJSONAnswer(w http.ResponseWriter, msgs []frame.Message, batch bool, sessionID string) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if sessionID != "" {
		h.Set(frame.HeaderSessionID, sessionID)
	}
	if !batch && len(msgs) == 1 {
		h.Set("Content-Length", strconv.Itoa(msgs[0].Len()))
		w.WriteHeader(http.StatusOK)
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
	w.WriteHeader(http.StatusOK)
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
