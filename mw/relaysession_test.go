package mw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

const (
	clientInit        = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1.50"}}}`
	clientInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// sessionServer scripts a Streamable HTTP server with sessions: initialize
// opens session s<n>; a message naming a session it does not know gets 404.
type sessionServer struct {
	*fakeServer

	mu      sync.Mutex
	n       int
	current string
	// initFail, when set, is returned for every initialize.
	initFail error
	// initializedFail, when set, is returned for every initialized.
	initializedFail error
	// noSessionID makes initialize answer without a session id.
	noSessionID bool
	// hold, when set, is called for every request before it is answered.
	hold func(ctx context.Context, m frame.Message)
}

func newSessionServer() *sessionServer {
	s := &sessionServer{}
	s.fakeServer = &fakeServer{answer: s.answer}
	return s
}

func (s *sessionServer) answer(ctx context.Context, m frame.Message) ([]frame.Message, error) {
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		hold(ctx, m)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Method() == "initialize" {
		if s.initFail != nil {
			return nil, s.initFail
		}
		r := answerWith(m, `{"protocolVersion":"2025-06-18","capabilities":{}}`)
		if s.noSessionID {
			return []frame.Message{r}, nil
		}
		s.n++
		s.current = "s" + decimal(s.n)
		return []frame.Message{r.WithHeader("Mcp-Session-Id", s.current)}, nil
	}
	if sid := m.Header().Get("Mcp-Session-Id"); sid != "" && sid != s.current {
		return nil, &frame.StatusError{Code: http.StatusNotFound}
	}
	if m.Method() == "notifications/initialized" && s.initializedFail != nil {
		return nil, s.initializedFail
	}
	if m.Kind() != frame.Request {
		return nil, nil
	}
	return []frame.Message{answerWith(m, `{"ok":true}`)}, nil
}

// restart makes the server forget every session.
func (s *sessionServer) restart() {
	s.mu.Lock()
	s.current = ""
	s.mu.Unlock()
}

func (s *sessionServer) set(f func(s *sessionServer)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

// summary renders what the server was sent: method or id, and session.
func (s *sessionServer) summary() []string {
	var out []string
	for _, m := range s.sent.all() {
		what := m.Method()
		if IsMinted(m.ID()) {
			what += " minted"
		} else if m.Kind() == frame.Request {
			what += " " + string(m.ID())
		}
		if sid := m.Header().Get("Mcp-Session-Id"); sid != "" {
			what += " sid=" + sid
		}
		out = append(out, what)
	}
	return out
}

// fakeStream is a StreamTransport whose Listen calls are scripted per call.
type fakeStream struct {
	calls  chan http.Header
	listen func(ctx context.Context, n int, h http.Header) (string, error)

	mu   sync.Mutex
	n    int
	ends []http.Header
}

func newFakeStream(listen func(ctx context.Context, n int, h http.Header) (string, error)) *fakeStream {
	return &fakeStream{calls: make(chan http.Header, 16), listen: listen}
}

func (f *fakeStream) Listen(ctx context.Context, h http.Header, opened func()) (string, error) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	f.calls <- h.Clone()
	if opened != nil {
		opened() // the stream is up at once
	}
	return f.listen(ctx, n, h)
}

func (f *fakeStream) EndSession(_ context.Context, h http.Header) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ends = append(f.ends, h.Clone())
	return nil
}

func (f *fakeStream) endCalls() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.ends...)
}

// blockUntilDone is a Listen that holds the stream open until ctx ends.
func blockUntilDone(ctx context.Context, _ int, _ http.Header) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// sleepLog records the waits asked of an injected Sleep.
type sleepLog struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepLog) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// clientHandshake runs the client's initialize and initialized through h.
func clientHandshake(t *testing.T, h Handler) {
	t.Helper()
	is := is.New(t)
	is.NoErr(h.Handle(t.Context(), frame.MustParse(clientInit)))
	is.NoErr(h.Handle(t.Context(), frame.MustParse(clientInitialized)))
}

func closeSession(t *testing.T, s *Session) {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestSessionStampsHeaders(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	defer closeSession(t, s)
	toServer, client := pipeline(srv.fakeServer, s.Middleware())
	is.Equal(s.ID(), "")
	is.Equal(s.ProtocolVersion(), "")

	clientHandshake(t, toServer)
	is.Equal(s.ID(), "s1")
	is.Equal(s.ProtocolVersion(), "2025-06-18")
	init, ok := s.Conn().ClientInitialize() // the handshake is the connection's
	is.True(ok)
	is.Equal(init.String(), clientInit)
	is.Equal(s.Conn().ProtocolVersion(), "2025-06-18")
	is.Equal(s.Conn().Era(), EraSession)
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)))

	sent := srv.sent.all()
	is.Equal(len(sent), 4)
	is.Equal(sent[0].String(), clientInit)               // initialize is forwarded as the client wrote it
	is.Equal(sent[0].Header().Get("Mcp-Session-Id"), "") // without a session
	is.Equal(sent[0].Header().Get("MCP-Protocol-Version"), "")
	for _, m := range sent[1:] {
		is.Equal(m.Header().Get("Mcp-Session-Id"), "s1")
		is.Equal(m.Header().Get("MCP-Protocol-Version"), "2025-06-18")
	}
	is.Equal(len(client.all()), 2) // the initialize and tools/call answers
}

// A client that sends on without waiting for its initialize's answer: its
// later messages wait for the session to exist and then carry its id; its
// answers to server requests do not wait.
func TestSessionMessagesWaitForTheInitializeInFlight(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	initHeld, release := make(chan struct{}), make(chan struct{})
	srv.set(func(s *sessionServer) {
		s.hold = func(_ context.Context, m frame.Message) {
			if m.Method() == "initialize" {
				close(initHeld)
				<-release
			}
		}
	})
	s := NewSession(SessionOptions{})
	defer closeSession(t, s)
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())

	initDone := make(chan error, 1)
	go func() { initDone <- toServer.Handle(t.Context(), frame.MustParse(clientInit)) }()
	<-initHeld
	later := make(chan error, 2)
	go func() { later <- toServer.Handle(t.Context(), frame.MustParse(clientInitialized)) }()
	go func() {
		later <- toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`))
	}()
	// An answer to a server request passes at once.
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":"srv-1","result":{}}`)))
	is.Equal(srv.summary(), []string{"initialize 0", ""}) // the others wait; "" is the answer

	close(release)
	is.NoErr(<-initDone)
	is.NoErr(<-later)
	is.NoErr(<-later)
	got := srv.summary()
	is.Equal(got[:2], []string{"initialize 0", ""})
	is.True(slices.Contains(got, "notifications/initialized sid=s1"))
	is.True(slices.Contains(got, "tools/call 2 sid=s1"))
}

func TestSessionRecoversFrom404(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	defer closeSession(t, s)
	toServer, client := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)

	srv.restart()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(call)))

	is.Equal(srv.summary(), []string{
		"initialize 0",
		"notifications/initialized sid=s1",
		"tools/call 1 sid=s1",
		"initialize minted",
		"notifications/initialized sid=s2",
		"tools/call 1 sid=s2",
	})
	sent := srv.sent.all()
	replay := sent[3]
	is.Equal(replay.String(), strings.Replace(clientInit, `"id":0`, `"id":`+string(replay.ID()), 1)) // the client's own initialize
	is.Equal(sent[4].String(), clientInitialized)
	is.Equal(sent[4].Header().Get("MCP-Protocol-Version"), "2025-06-18")
	is.Equal(sent[5].String(), call)
	is.Equal(s.ID(), "s2")
	init, ok := s.Conn().ClientInitialize()
	is.True(ok)
	is.Equal(init.String(), clientInit) // still the client's own, not the replay

	var ids []string
	for _, m := range client.all() {
		ids = append(ids, string(m.ID()))
	}
	is.Equal(ids, []string{"0", "1"}) // the replayed initialize never reaches the client
}

// Reestablished is called once per re-established session, with its new
// id in place, before the message that waited goes on.
func TestSessionReestablishedHook(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	var s *Session
	var seen []string
	s = NewSession(SessionOptions{Reestablished: func() {
		seen = append(seen, fmt.Sprint(len(srv.summary())))
	}})
	defer closeSession(t, s)
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	is.Equal(len(seen), 0) // not for the client's own handshake

	srv.restart()
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	// Called after the replayed initialize and initialized (5 messages
	// then), before the tools/list went again.
	is.Equal(seen, []string{"5"})
}

func TestSessionRecoveryFailure(t *testing.T) {
	for _, tt := range []struct {
		name   string
		outage func(s *sessionServer)
	}{
		{"initialize refused", func(s *sessionServer) { s.initFail = &frame.StatusError{Code: 500} }},
		{"initialize unreachable", func(s *sessionServer) { s.initFail = &frame.SendError{Err: errors.New("refused")} }},
		{"no session id", func(s *sessionServer) { s.noSessionID = true }},
		{"initialized refused", func(s *sessionServer) { s.initializedFail = &frame.StatusError{Code: 503} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := newSessionServer()
			s := NewSession(SessionOptions{})
			defer closeSession(t, s)
			toServer, client := pipeline(srv.fakeServer, s.Middleware())
			clientHandshake(t, toServer)

			srv.restart()
			srv.set(tt.outage)
			req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			err := toServer.Handle(t.Context(), req)
			is.True(errors.Is(err, frame.ErrSessionLost))
			is.Equal(ErrorFor(req, err).String(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"session lost"}}`)
			is.Equal(s.ID(), "")
			is.Equal(len(client.all()), 1) // only the first initialize answer

			// The server comes back: the next message recovers first.
			srv.set(func(s *sessionServer) { s.initFail, s.initializedFail, s.noSessionID = nil, nil, false })
			is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)))
			got := srv.summary()
			is.Equal(got[len(got)-3:], []string{
				"initialize minted",
				"notifications/initialized sid=s" + decimal(srv.n),
				"ping 2 sid=s" + decimal(srv.n),
			})
			is.Equal(len(client.all()), 2)
		})
	}
}

func TestSessionRecoveryFailsAgain(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	defer closeSession(t, s)
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	srv.restart()
	srv.set(func(s *sessionServer) { s.initFail = &frame.StatusError{Code: 502} })

	for range 2 {
		err := toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		is.True(errors.Is(err, frame.ErrSessionLost)) // each try reports the session lost
	}
	is.Equal(srv.summary()[2:], []string{
		"ping 1 sid=s1",
		"initialize minted",
		"initialize minted", // the second message tried again before being sent
	})
}

func TestSession404WithoutSession(t *testing.T) {
	t.Run("before initialize", func(t *testing.T) {
		is := is.New(t)
		srv := &fakeServer{answer: func(context.Context, frame.Message) ([]frame.Message, error) {
			return nil, &frame.StatusError{Code: 404}
		}}
		s := NewSession(SessionOptions{})
		defer closeSession(t, s)
		toServer, _ := pipeline(srv, s.Middleware())
		req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		err := toServer.Handle(t.Context(), req)
		is.True(!errors.Is(err, frame.ErrSessionLost))
		is.Equal(ErrorFor(req, err).String(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"HTTP 404"}}`)
		is.Equal(len(srv.sent.all()), 1)
	})
	t.Run("stateless server", func(t *testing.T) {
		is := is.New(t)
		srv := newSessionServer()
		srv.noSessionID = true
		s := NewSession(SessionOptions{})
		defer closeSession(t, s)
		toServer, _ := pipeline(srv.fakeServer, s.Middleware())
		clientHandshake(t, toServer)
		is.Equal(s.ID(), "")
		is.Equal(s.ProtocolVersion(), "2025-06-18")
		srv.fakeServer.answer = func(context.Context, frame.Message) ([]frame.Message, error) {
			return nil, &frame.StatusError{Code: 404}
		}
		err := toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		var st *frame.StatusError
		is.True(errors.As(err, &st)) // returned unchanged
		is.Equal(st.Code, 404)
		is.Equal(len(srv.sent.all()), 3) // no replay
		is.Equal(srv.sent.all()[1].Header().Get("MCP-Protocol-Version"), "2025-06-18")
	})
}

// A message refused with 404 again under each new session (every server
// it reaches forgets it) is sent again under MaxSessionRecoveries new
// sessions, then fails: the loop is bounded.
func TestSessionResendIsBounded(t *testing.T) {
	is := is.New(t)
	toServer, srv := handshookSession(t, func(srv *sessionServer, m frame.Message) {
		if m.Method() == "tools/call" {
			srv.restart() // every call finds its session gone
		}
	})
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	err := toServer.Handle(t.Context(), req)
	is.Equal(ErrorFor(req, err).String(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"HTTP 404"}}`)
	is.Equal(srv.summary()[2:], []string{
		"tools/call 1 sid=s1",
		"initialize minted",
		"notifications/initialized sid=s2",
		"tools/call 1 sid=s2",
		"initialize minted",
		"notifications/initialized sid=s3",
		"tools/call 1 sid=s3",
		"initialize minted",
		"notifications/initialized sid=s4",
		"tools/call 1 sid=s4",
	})
	is.Equal(MaxSessionRecoveries, 3)
}

// A message whose new session is lost too before it gets there (a proxy
// sent it to a replica that died just after the session was established
// on it) is sent again under a third session, and answered.
func TestSessionResendSurvivesASecondLoss(t *testing.T) {
	is := is.New(t)
	lost := 0
	toServer, srv := handshookSession(t, func(srv *sessionServer, m frame.Message) {
		if m.Method() == "tools/call" && lost < 2 {
			lost++
			srv.restart()
		}
	})
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	is.NoErr(toServer.Handle(t.Context(), req)) // answered under the third session
	is.Equal(srv.summary()[2:], []string{
		"tools/call 1 sid=s1",
		"initialize minted",
		"notifications/initialized sid=s2",
		"tools/call 1 sid=s2",
		"initialize minted",
		"notifications/initialized sid=s3",
		"tools/call 1 sid=s3",
	})
}

func TestSessionConcurrent404sShareOneRecovery(t *testing.T) {
	is := is.New(t)
	const n = 5
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	defer closeSession(t, s)
	toServer, client := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)

	// Hold every call under s1 until all n are in flight, then let the
	// server forget s1 so they all fail together.
	var mu sync.Mutex
	arrived := 0
	gate := make(chan struct{})
	srv.set(func(s *sessionServer) {
		s.hold = func(_ context.Context, m frame.Message) {
			if m.Method() != "tools/call" || m.Header().Get("Mcp-Session-Id") != "s1" {
				return
			}
			mu.Lock()
			arrived++
			if arrived == n {
				srv.restart()
				close(gate)
			}
			mu.Unlock()
			<-gate
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":`+decimal(i+1)+`,"method":"tools/call"}`))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	inits := 0
	for _, l := range srv.summary() {
		if l == "initialize minted" {
			inits++
		}
	}
	is.Equal(inits, 1)               // one re-initialize for all
	is.Equal(s.ID(), "s2")           // and one new session
	is.Equal(len(client.all()), n+1) // every call answered, plus the first initialize
}

func TestSessionClientReinitialize(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	defer closeSession(t, s)
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	clientHandshake(t, toServer) // the client starts over itself
	is.Equal(s.ID(), "s2")
	sent := srv.sent.all()
	is.Equal(sent[2].Header().Get("Mcp-Session-Id"), "") // a client initialize never carries the old session
}

func TestSessionWaiterGivesUp(t *testing.T) {
	is := is.New(t)
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)

	replaying := make(chan struct{})
	srv.restart()
	srv.set(func(s *sessionServer) {
		s.hold = func(ctx context.Context, m frame.Message) {
			if m.Method() == "initialize" {
				close(replaying)
				<-ctx.Done() // the server hangs
			}
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)) }()
	<-replaying
	cancel()
	is.True(errors.Is(<-done, context.Canceled)) // the request gave up waiting
	is.NoErr(s.Close(context.Background()))      // Close ends the hanging re-initialize
	is.True(errors.Is(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)), frame.ErrClosed))
}

func TestSessionStream(t *testing.T) {
	is := is.New(t)
	stream := newFakeStream(func(ctx context.Context, n int, h http.Header) (string, error) {
		return "", &frame.StatusError{Code: http.StatusMethodNotAllowed}
	})
	var slept sleepLog
	srv := newSessionServer()
	s := NewSession(SessionOptions{Transport: stream, Sleep: slept.sleep})
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())

	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(clientInit)))
	select {
	case <-stream.calls:
		t.Fatal("GET before initialized")
	default:
	}
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(clientInitialized)))
	h := <-stream.calls
	is.Equal(h.Get("Mcp-Session-Id"), "s1")
	is.Equal(h.Get("MCP-Protocol-Version"), "2025-06-18")
	is.Equal(h.Get("Last-Event-ID"), "")

	srv.restart()
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	h = <-stream.calls
	is.Equal(h.Get("Mcp-Session-Id"), "s2") // restarted for the new session

	is.NoErr(s.Close(t.Context()))
	is.Equal(len(slept.all()), 0) // 405 stops quietly, no reconnect
	ends := stream.endCalls()
	is.Equal(len(ends), 1)
	is.Equal(ends[0].Get("Mcp-Session-Id"), "s2")
	is.Equal(ends[0].Get("MCP-Protocol-Version"), "2025-06-18")
	is.Equal(len(stream.calls), 0) // two GETs in all
}

func TestSessionStreamReconnects(t *testing.T) {
	is := is.New(t)
	stream := newFakeStream(func(ctx context.Context, n int, h http.Header) (string, error) {
		switch n {
		case 1:
			return "ev-3", &frame.SendError{Sent: true, Err: io.ErrUnexpectedEOF}
		case 2:
			return "", &frame.StatusError{Code: http.StatusBadGateway}
		case 3:
			return "ev-9", nil // the server closed the stream
		}
		return blockUntilDone(ctx, n, h)
	})
	var slept sleepLog
	s, _, _, client := linearBackoffSession(t, stream, &slept)

	var last []string
	for range 4 {
		h := <-stream.calls
		is.Equal(h.Get("Mcp-Session-Id"), "s1")
		last = append(last, h.Get("Last-Event-ID"))
	}
	is.Equal(last, []string{"", "ev-3", "ev-3", "ev-9"}) // resumes after the last event seen

	is.NoErr(s.Close(t.Context()))
	is.NoErr(s.Close(t.Context())) // idempotent
	is.Equal(slept.all(), []time.Duration{time.Second, 2 * time.Second, time.Second})
	is.Equal(len(stream.endCalls()), 1) // DELETE once
	is.Equal(len(client.all()), 1)
}

func TestSessionStream404WaitsForRecovery(t *testing.T) {
	is := is.New(t)
	stream := newFakeStream(func(ctx context.Context, n int, h http.Header) (string, error) {
		if n == 1 {
			return "", &frame.StatusError{Code: http.StatusNotFound}
		}
		return blockUntilDone(ctx, n, h)
	})
	var slept sleepLog
	srv := newSessionServer()
	s := NewSession(SessionOptions{Transport: stream, Sleep: slept.sleep})
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	is.Equal((<-stream.calls).Get("Mcp-Session-Id"), "s1")

	srv.restart()
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	is.Equal((<-stream.calls).Get("Mcp-Session-Id"), "s2")
	is.NoErr(s.Close(t.Context()))
	is.Equal(len(slept.all()), 0)
}

// A GET stream refused with 401 (a token being refreshed), 403 or 429 is
// tried again after the backoff instead of being given up for the session.
func TestSessionStreamRetriesAfterAuthOrRateLimit(t *testing.T) {
	is := is.New(t)
	stream := newFakeStream(func(ctx context.Context, n int, h http.Header) (string, error) {
		switch n {
		case 1:
			return "", &frame.StatusError{Code: http.StatusUnauthorized}
		case 2:
			return "", &frame.StatusError{Code: http.StatusTooManyRequests}
		}
		return blockUntilDone(ctx, n, h)
	})
	var slept sleepLog
	s, _, _, _ := linearBackoffSession(t, stream, &slept)
	for range 3 {
		is.Equal((<-stream.calls).Get("Mcp-Session-Id"), "s1")
	}
	is.NoErr(s.Close(t.Context()))
	is.Equal(slept.all(), []time.Duration{time.Second, 2 * time.Second})
}

// linearBackoffSession is a Session on stream whose GET reconnects wait
// attempt seconds (recorded in slept), after the client's handshake.
func linearBackoffSession(t *testing.T, stream *fakeStream, slept *sleepLog) (*Session, *sessionServer, Handler, *recorder) {
	t.Helper()
	srv := newSessionServer()
	s := NewSession(SessionOptions{
		Transport:     stream,
		Sleep:         slept.sleep,
		ListenBackoff: func(attempt int) time.Duration { return time.Duration(attempt) * time.Second },
	})
	toServer, client := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	return s, srv, toServer, client
}

func TestSessionCloseWithoutSession(t *testing.T) {
	is := is.New(t)
	stream := newFakeStream(blockUntilDone)
	s := NewSession(SessionOptions{Transport: stream})
	is.NoErr(s.Close(t.Context()))
	is.Equal(len(stream.endCalls()), 0) // nothing to end

	s = NewSession(SessionOptions{})
	srv := newSessionServer()
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	is.NoErr(s.Close(t.Context())) // no transport: nothing to stop or end
}

func TestDefaultListenBackoff(t *testing.T) {
	is := is.New(t)
	var got []time.Duration
	for a := 1; a <= 8; a++ {
		got = append(got, defaultListenBackoff(a))
	}
	is.Equal(got, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second})
	is.Equal(defaultListenBackoff(1000), 30*time.Second)
}

// gatedStream is a StreamTransport whose GET is answered only when the
// test says so: with a stream (up) or a refusal.
type gatedStream struct {
	asked  chan struct{} // a GET was sent
	answer chan bool     // true: the stream is up; false: 405
}

func newGatedStream() *gatedStream {
	return &gatedStream{asked: make(chan struct{}, 4), answer: make(chan bool, 1)}
}

func (g *gatedStream) Listen(ctx context.Context, _ http.Header, opened func()) (string, error) {
	g.asked <- struct{}{}
	select {
	case up := <-g.answer:
		if !up {
			return "", &frame.StatusError{Code: http.StatusMethodNotAllowed}
		}
		opened()
		<-ctx.Done()
		return "", ctx.Err()
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (g *gatedStream) EndSession(context.Context, http.Header) error { return nil }

// After initialized, the client's next request waits until the server has
// answered the GET stream: a server may send the request it needs answered
// (an elicitation) on that stream only. The client's answers do not wait.
func TestSessionRequestsWaitForTheGETStream(t *testing.T) {
	for _, up := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "refused"}[up], func(t *testing.T) {
			is := is.New(t)
			stream := newGatedStream()
			srv := newSessionServer()
			s := NewSession(SessionOptions{Transport: stream, StreamWait: time.Hour})
			defer closeSession(t, s)
			toServer, _ := pipeline(srv.fakeServer, s.Middleware())
			clientHandshake(t, toServer)
			<-stream.asked

			done := make(chan error, 1)
			go func() {
				done <- toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
			}()
			is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":"srv-1","result":{}}`))) // an answer goes at once
			is.Equal(srv.summary(), []string{"initialize 0", "notifications/initialized sid=s1", " sid=s1"})
			stream.answer <- up
			is.NoErr(<-done)
			is.Equal(srv.summary()[3], "tools/call 1 sid=s1")
		})
	}
}

// A GET the server never answers holds the client's messages for
// StreamWait at most.
func TestSessionStreamWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		stream := newGatedStream()
		srv := newSessionServer()
		s := NewSession(SessionOptions{Transport: stream, StreamWait: 3 * time.Second})
		defer closeSession(t, s)
		toServer, _ := pipeline(srv.fakeServer, s.Middleware())
		clientHandshake(t, toServer)
		start := time.Now()
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
		is.Equal(time.Since(start), 3*time.Second)
		start = time.Now()
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)))
		is.Equal(time.Since(start), time.Duration(0)) // only once
	})
}

// A re-establishment whose initialized is refused with 404 (the replica
// that took the new session died before the notification reached it) is
// tried again, and the message goes through under the session after.
func TestSessionReestablishmentIsTriedAgain(t *testing.T) {
	is := is.New(t)
	calls, inits := 0, 0
	toServer, srv := handshookSession(t, func(srv *sessionServer, m frame.Message) {
		switch m.Method() {
		case "tools/call":
			if calls++; calls == 1 {
				srv.restart() // the session is gone
			}
		case "notifications/initialized":
			if inits++; inits == 1 {
				srv.restart() // and so is the new one, at once
			}
		}
	})
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	is.NoErr(toServer.Handle(t.Context(), req)) // answered under the third session
	is.Equal(srv.summary()[2:], []string{
		"tools/call 1 sid=s1",
		"initialize minted",
		"notifications/initialized sid=s2",
		"initialize minted",
		"notifications/initialized sid=s3",
		"tools/call 1 sid=s3",
	})
}

// A re-establishment refused for good (an initialize answered with an
// error) is not tried again.
func TestHandshakeMayRecover(t *testing.T) {
	is := is.New(t)
	is.True(handshakeMayRecover(&frame.StatusError{Code: 404}))
	is.True(handshakeMayRecover(&frame.StatusError{Code: 503}))
	is.True(handshakeMayRecover(errors.New("connection refused")))
	is.True(!handshakeMayRecover(&frame.StatusError{Code: 401}))
	is.True(!handshakeMayRecover(fmt.Errorf("%w with an error: nope", errInitializeAnswered)))
	is.True(!handshakeMayRecover(frame.ErrClosed))
}

// handshookSession returns a Session over a fake server, after the
// client's handshake, and the server; hold, when set, sees every message
// the server gets from then on (it may restart the server, which forgets
// its sessions).
func handshookSession(t *testing.T, hold func(srv *sessionServer, m frame.Message)) (Handler, *sessionServer) {
	t.Helper()
	srv := newSessionServer()
	s := NewSession(SessionOptions{})
	t.Cleanup(func() { closeSession(t, s) })
	toServer, _ := pipeline(srv.fakeServer, s.Middleware())
	clientHandshake(t, toServer)
	if hold != nil {
		srv.set(func(s *sessionServer) {
			s.hold = func(_ context.Context, m frame.Message) { hold(srv, m) }
		})
	}
	return toServer, srv
}
