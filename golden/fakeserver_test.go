package golden

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tidwall/gjson"
)

// fakeServer is the scripted MCP server of one transcript. It is an
// http.RoundTripper, handed to the relay as its HTTP client's Transport, so
// no socket is involved and every wait is durably blocking inside the
// synctest bubble.
//
// Ordering. Requests do not reach the script directly: each one waits at a
// gate until the test goroutine admits it, and so does every scripted body
// that resumes after a delay. The test goroutine admits one waiter at a
// time, always the one with the smallest key, and lets the bubble settle
// (synctest.Wait) before the next. Waiters that are pending together are
// the concurrent ones of one quiescence epoch; sorting them by a stable key
// (a request's rendered record, see render; a resumed body after every
// request) makes the recorded order and the order script entries are taken
// independent of goroutine scheduling, while cause and effect stay in order
// (a request caused by an admitted one arrives only after it).
type fakeServer struct {
	t    testing.TB
	host string // the host of the URL under test; requests to it print as path?query

	kick chan struct{} // a waiter arrived; buffered 1

	mu       sync.Mutex
	entries  []*entry
	pending  []*waiter
	records  []string
	seq      int
	streams  []*heldStream // bodies that hold, most recent last
	problems []string
}

func newFakeServer(t testing.TB, entries []*entry, target string) *fakeServer {
	u, err := url.Parse(target)
	host := ""
	if err == nil {
		host = u.Host
	}
	return &fakeServer{t: t, host: host, entries: entries, kick: make(chan struct{}, 1)}
}

// waiter is a request or a resuming body waiting at the gate.
type waiter struct {
	key    string
	record string // requests only: the rendered request
	method string
	body   []byte
	admit  chan struct{}
	// set by the admitter before admit is closed
	entry *entry
	seq   int
}

// problem notes a script failure; the test reports them all at the end.
func (s *fakeServer) problem(format string, args ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// RoundTrip implements http.RoundTripper.
func (s *fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	rec := s.render(req, body)
	w := &waiter{key: rec, record: rec, method: req.Method, body: body, admit: make(chan struct{})}
	ctx := req.Context()
	if !s.wait(ctx, w) {
		return nil, context.Cause(ctx)
	}
	e := w.entry
	if e == nil {
		msg := fmt.Sprintf("golden: no script entry for request %d", w.seq)
		return &http.Response{
			StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"text/plain"}},
			Body:          io.NopCloser(strings.NewReader(msg)),
			ContentLength: int64(len(msg)), Request: req,
		}, nil
	}
	switch e.fail {
	case "refused":
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	case "reset":
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	b := &fakeBody{ctx: ctx, chunks: make(chan []byte), end: make(chan struct{}), closed: make(chan struct{})}
	go s.produce(ctx, e, b, w.seq, gjson.GetBytes(body, "id").Raw)
	return &http.Response{
		StatusCode: e.status, Status: fmt.Sprintf("%d %s", e.status, http.StatusText(e.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: e.header.Clone(), Body: b, ContentLength: -1, Request: req,
	}, nil
}

// wait parks w at the gate until it is admitted (true) or ctx ends (false).
func (s *fakeServer) wait(ctx context.Context, w *waiter) bool {
	s.mu.Lock()
	s.pending = append(s.pending, w)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	select {
	case <-w.admit:
		return true
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if i := slices.Index(s.pending, w); i >= 0 {
			s.pending = slices.Delete(s.pending, i, i+1)
			return false
		}
		// Admitted meanwhile: the admitter already recorded it.
		return true
	}
}

// admitOne admits the pending waiter with the smallest key, if any, and
// reports whether there was one. Only the test goroutine calls it.
func (s *fakeServer) admitOne() bool {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return false
	}
	sort.SliceStable(s.pending, func(i, j int) bool { return s.pending[i].key < s.pending[j].key })
	w := s.pending[0]
	s.pending = s.pending[1:]
	if w.record != "" {
		s.seq++
		w.seq = s.seq
		s.records = append(s.records, w.record)
		for _, e := range s.entries {
			if e.matches(w.method, w.body) {
				e.used, w.entry = true, e
				break
			}
		}
		if w.entry == nil {
			s.problems = append(s.problems, fmt.Sprintf("request %d matches no script entry (answered 500):\n%s", w.seq, w.record))
		}
	}
	s.mu.Unlock()
	close(w.admit)
	return true
}

// settle lets the bubble run until it is quiet: every goroutine blocked and
// nobody waiting at the gate. With until set, fake time may pass (the test
// goroutine blocks on until instead of only in synctest.Wait), and settle
// returns once until is ready and the bubble is quiet again. Only the test
// goroutine calls it.
func (s *fakeServer) settle(until <-chan struct{}) {
	for {
		synctest.Wait()
		if s.admitOne() {
			continue
		}
		if until == nil {
			return
		}
		select {
		case <-until:
			until = nil
		case <-s.kick:
		}
	}
}

// produce runs a scripted body.
// id is the raw JSON-RPC id of the request the body answers ("" for none).
func (s *fakeServer) produce(ctx context.Context, e *entry, b *fakeBody, seq int, id string) {
	err := io.EOF
	defer func() { b.finish(err) }()
	for _, it := range e.body {
		switch it.kind {
		case itemData:
			if !b.send(it.data) {
				return
			}
		case itemDelay:
			t := time.NewTimer(it.d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			case <-b.closed:
				t.Stop()
				return
			}
			w := &waiter{key: fmt.Sprintf("~resume %06d", seq), admit: make(chan struct{})}
			if !s.wait(ctx, w) {
				return
			}
		case itemBreak:
			err = io.ErrUnexpectedEOF
			return
		case itemHold:
			if !s.hold(ctx, b, id) {
				return
			}
		case itemPush:
			s.push(e, it.data, it.target)
		case itemEndStream:
			s.endStream(e, it.target)
		}
	}
}

// heldStream is a body that holds: it carries pushed events until ended.
type heldStream struct {
	id    string // raw JSON-RPC id of the request whose body this is
	mu    sync.Mutex
	queue [][]byte
	ended bool
	wake  chan struct{} // buffered 1
}

// hold keeps b open, sending what is pushed, until the stream is ended
// (true: the body then goes on with its next item) or the client goes
// away (false).
func (s *fakeServer) hold(ctx context.Context, b *fakeBody, id string) bool {
	h := &heldStream{id: id, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.streams = append(s.streams, h)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if i := slices.Index(s.streams, h); i >= 0 {
			s.streams = slices.Delete(s.streams, i, i+1)
		}
		s.mu.Unlock()
	}()
	for {
		h.mu.Lock()
		var next []byte
		if len(h.queue) > 0 {
			next, h.queue = h.queue[0], h.queue[1:]
		}
		ended := h.ended
		h.mu.Unlock()
		switch {
		case next != nil:
			if !b.send(next) {
				return false
			}
			continue
		case ended:
			return true
		}
		select {
		case <-h.wake:
		case <-ctx.Done():
			return false
		case <-b.closed:
			return false
		}
	}
}

// current returns the most recently opened held stream that has not
// ended, or nil. A non-empty id picks the one answering the request with
// that raw JSON-RPC id instead.
func (s *fakeServer) current(id string) *heldStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.streams) - 1; i >= 0; i-- {
		h := s.streams[i]
		h.mu.Lock()
		ended := h.ended
		h.mu.Unlock()
		if !ended && (id == "" || h.id == id) {
			return h
		}
	}
	return nil
}

func (s *fakeServer) push(e *entry, data []byte, id string) {
	h := s.current(id)
	if h == nil {
		s.problem("%s: push with no open held stream%s: %s", e, forID(id), data)
		return
	}
	ev := make([]byte, 0, len(data)+24)
	ev = append(ev, "event: message\ndata: "...)
	ev = append(ev, data...)
	ev = append(ev, "\n\n"...)
	h.mu.Lock()
	h.queue = append(h.queue, ev)
	h.mu.Unlock()
	h.signal()
}

func (s *fakeServer) endStream(e *entry, id string) {
	h := s.current(id)
	if h == nil {
		s.problem("%s: end-stream with no open held stream%s", e, forID(id))
		return
	}
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
	h.signal()
}

// forID names the request a push or end-stream targets, for a problem.
func forID(id string) string {
	if id == "" {
		return ""
	}
	return " for id=" + id
}

func (h *heldStream) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// unused returns the script entries no request took.
func (s *fakeServer) unused() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*entry
	for _, e := range s.entries {
		if !e.used {
			out = append(out, e)
		}
	}
	return out
}

// transcript returns the want/http section: every admitted request, in
// order.
func (s *fakeServer) transcript() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []byte(strings.Join(s.records, ""))
}

// render writes a request as the want/http section shows it: the request
// line (path?query, or the whole URL for another host), every header sorted
// by name, one value a line, a blank line, and for a request with a body
// the body and another blank line.
func (s *fakeServer) render(req *http.Request, body []byte) string {
	var b strings.Builder
	target := req.URL.String()
	if req.URL.Host == s.host {
		target = req.URL.RequestURI()
	}
	b.WriteString(req.Method + " " + target + "\n")
	names := make([]string, 0, len(req.Header))
	for k := range req.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range req.Header[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	b.WriteString("\n")
	if len(body) > 0 {
		b.Write(body)
		if !bytes.HasSuffix(body, []byte("\n")) {
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// fakeBody is a response body fed by a producer goroutine, one chunk per
// Read at most. Like a real connection's body, Read fails once the
// request's context is done.
type fakeBody struct {
	ctx       context.Context
	chunks    chan []byte   // producer to reader
	end       chan struct{} // closed by finish; err says how the body ended
	err       error
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	rest      []byte // unread part of the last chunk
}

func (b *fakeBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, context.Cause(b.ctx)
	}
	if len(b.rest) == 0 {
		select {
		case c := <-b.chunks:
			b.rest = c
		case <-b.end:
			return 0, b.err
		case <-b.ctx.Done():
			return 0, context.Cause(b.ctx)
		case <-b.closed:
			return 0, errors.New("golden: read on closed body")
		}
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *fakeBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}

// send hands c to the reader; false when the reader is gone.
func (b *fakeBody) send(c []byte) bool {
	select {
	case b.chunks <- c:
		return true
	case <-b.ctx.Done():
		return false
	case <-b.closed:
		return false
	}
}

// finish ends the body with err (io.EOF for a clean end).
func (b *fakeBody) finish(err error) {
	b.err = err
	close(b.end)
}
