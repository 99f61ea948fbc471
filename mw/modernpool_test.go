package mw

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// poolBackend is a Backend in memory that records what it is handed.
type poolBackend struct {
	principal string
	got       recorder
	done      chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
}

func (b *poolBackend) Handle(ctx context.Context, m frame.Message) error { return b.got.Handle(ctx, m) }
func (b *poolBackend) Done() <-chan struct{}                             { return b.done }
func (b *poolBackend) Close(context.Context) error {
	b.closed.Store(true)
	b.exit()
	return nil
}
func (b *poolBackend) exit() { b.closeOnce.Do(func() { close(b.done) }) }

// manualTimers is an AfterFunc whose timers fire when the test says so.
type manualTimers struct {
	mu sync.Mutex
	fs []func()
}

func (m *manualTimers) AfterFunc(_ time.Duration, f func()) func() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := len(m.fs)
	m.fs = append(m.fs, f)
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		stopped := m.fs[i] != nil
		m.fs[i] = nil
		return stopped
	}
}

// fire runs the timers armed and not stopped.
func (m *manualTimers) fire() {
	m.mu.Lock()
	fs := m.fs
	m.fs = make([]func(), len(fs))
	m.mu.Unlock()
	for _, f := range fs {
		if f != nil {
			f()
		}
	}
}

type poolHarness struct {
	pool    *Pool
	timers  *manualTimers
	mu      sync.Mutex
	started []*poolBackend
}

func newPoolHarness(t *testing.T, max int, ttl time.Duration) *poolHarness {
	h := &poolHarness{timers: &manualTimers{}}
	h.pool = NewPool(PoolOptions{
		Start: func(_ context.Context, principal string) (Backend, error) {
			b := &poolBackend{principal: principal, done: make(chan struct{})}
			h.mu.Lock()
			h.started = append(h.started, b)
			h.mu.Unlock()
			return b, nil
		},
		MaxChildren: max,
		IdleTTL:     ttl,
		AfterFunc:   h.timers.AfterFunc,
	})
	t.Cleanup(func() { h.pool.Close(context.Background()) })
	return h
}

func (h *poolHarness) backends() []*poolBackend {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*poolBackend(nil), h.started...)
}

// request hands a request of principal to the pool on exchange x.
func (h *poolHarness) request(principal string, x Exchange) error {
	ctx := WithPrincipal(WithExchange(context.Background(), x), principal)
	return h.pool.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
}

func TestPoolOneServerPerPrincipal(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 0, 0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := newPOST(false)
			is.NoErr(h.request("alice", x))
			x.finish()
		}()
	}
	wg.Wait()
	is.NoErr(h.request("bob", newPOST(false)))
	bs := h.backends()
	is.Equal(len(bs), 2) // alice's eight requests started one server
	is.Equal(len(bs[0].got.all()), 8)
	is.Equal(h.pool.Len(), 2)
}

func TestPoolStartsAgainAfterTheServerExits(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 0, 0)
	is.NoErr(h.request("", newPOST(false)))
	first := h.backends()[0]
	first.exit()
	deadline := time.Now().Add(5 * time.Second)
	for h.pool.Len() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polls the watcher's outcome; it has no event to wait on
	}
	is.NoErr(h.request("", newPOST(false)))
	is.Equal(len(h.backends()), 2)
}

func TestPoolReapsIdleServers(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 0, time.Minute)
	x := newPOST(false)
	is.NoErr(h.request("", x))
	h.timers.fire() // in use: nothing is armed
	is.True(!h.backends()[0].closed.Load())
	x.finish() // the request is over: the idle timer is armed
	busy := newPOST(false)
	is.NoErr(h.request("", busy)) // used again: the timer is stopped
	h.timers.fire()
	is.True(!h.backends()[0].closed.Load())
	busy.finish()
	h.timers.fire()
	is.NoErr(h.pool.Close(context.Background())) // waits for the reaper's close
	is.True(h.backends()[0].closed.Load())
	is.Equal(len(h.backends()), 1)
}

func TestPoolIsBounded(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 1, 0)
	is.True(!h.pool.Full())
	alice := newPOST(false)
	is.NoErr(h.request("alice", alice))
	is.True(h.pool.Full())                  // one server, busy
	err := h.request("bob", newPOST(false)) // alice's server is busy
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.Equal(st.Header.Get("Retry-After"), "1") // try again later
	alice.finish()
	is.True(!h.pool.Full())                    // idle: it would make room
	is.NoErr(h.request("bob", newPOST(false))) // alice's idle server makes room
	is.Equal(len(h.backends()), 2)
	is.NoErr(h.pool.Close(context.Background()))
	is.True(h.backends()[0].closed.Load())
}

func TestPoolEvictsTheLongestIdle(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 2, 0)
	for _, principal := range []string{"alice", "bob", "alice"} {
		x := newPOST(false)
		is.NoErr(h.request(principal, x))
		x.finish()
	}
	// bob's server has been idle the longest: carol's takes its place.
	is.NoErr(h.request("carol", newPOST(false)))
	is.NoErr(h.request("alice", newPOST(false))) // alice's server is still there
	is.Equal(len(h.backends()), 3)
	is.Equal(h.backends()[1].principal, "bob")
	is.NoErr(h.pool.Close(context.Background())) // waits for the eviction's close
	is.True(h.backends()[1].closed.Load())
}

func TestPoolRefusesAfterClose(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 0, 0)
	is.NoErr(h.request("", newPOST(false)))
	is.NoErr(h.pool.Close(context.Background()))
	is.True(h.backends()[0].closed.Load())
	var st *frame.StatusError
	is.True(errors.As(h.request("", newPOST(false)), &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.Equal(st.Header.Get("Retry-After"), "1")
}

func TestPoolReportsAServerThatCannotStart(t *testing.T) {
	is := is.New(t)
	pool := NewPool(PoolOptions{Start: func(context.Context, string) (Backend, error) {
		return nil, errors.New("exec: no such file")
	}})
	defer pool.Close(context.Background())
	err := pool.Handle(WithExchange(context.Background(), newPOST(false)), frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusBadGateway)
	is.Equal(pool.Len(), 0)
}

func TestChildHandshake(t *testing.T) {
	for _, tt := range []struct {
		name     string
		discover string // the child's answer to server/discover; "" for none (it exits)
		era      Era
		initSent bool
	}{
		{"dual-era", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}`, EraStateless, false},
		{"session era: -32601", `error:-32601`, EraSession, true},
		{"session era: no 2026-07-28 version", `{"supportedVersions":["2025-11-25"],"capabilities":{}}`, EraSession, true},
		{"2026-07-28 by -32020", `error:-32020`, EraStateless, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			conn := NewConn(EraUnknown)
			child := newAsyncChild()
			hs := NewChildHandshake(conn, child)
			child.up.Bind(hs.FromChild())
			go func() {
				for m := range child.seen {
					switch m.Method() {
					case "server/discover":
						if rest, ok := strings.CutPrefix(tt.discover, "error:"); ok {
							child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"error":{"code":`+rest+`,"message":"x"}}`)
						} else {
							child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":`+tt.discover+`}`)
						}
					case "initialize":
						child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"c","version":"1"}}}`)
					case "notifications/initialized":
						return
					}
				}
			}()
			is.NoErr(hs.Run(context.Background(), ChildHandshakeOptions{}))
			close(child.seen) // nothing more is sent
			is.Equal(conn.Era(), tt.era)
			_, initialized := conn.ServerInitialize()
			is.Equal(initialized, tt.initSent)
			if tt.initSent {
				init, _ := conn.ClientInitialize()
				is.Equal(init.Get("params.capabilities").Raw, `{"sampling":{},"elicitation":{},"roots":{}}`)
			}
			if tt.era == EraStateless {
				_, v := conn.Discovery()
				is.Equal(v, ModernVersion)
			}
		})
	}
}

func TestChildHandshakeReportsAChildThatDiesOnDiscover(t *testing.T) {
	is := is.New(t)
	conn := NewConn(EraUnknown)
	child := newAsyncChild()
	hs := NewChildHandshake(conn, child)
	child.up.Bind(hs.FromChild())
	go func() {
		<-child.seen
		conn.Close(errors.New("exited"))
	}()
	is.True(errors.Is(hs.Run(context.Background(), ChildHandshakeOptions{}), ErrChildDied))
}

func TestChildHandshakeTakesASilentChildForTheSessionEra(t *testing.T) {
	is := is.New(t)
	conn := NewConn(EraUnknown)
	child := newAsyncChild()
	hs := NewChildHandshake(conn, child)
	child.up.Bind(hs.FromChild())
	go func() {
		<-child.seen // server/discover: never answered
		m := <-child.seen
		child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	}()
	is.NoErr(hs.Run(context.Background(), ChildHandshakeOptions{DiscoverTimeout: time.Millisecond}))
	is.Equal(conn.Era(), EraSession)
	is.Equal(conn.ProtocolVersion(), "2025-06-18")
}

func TestPoolStartsNothingForANotification(t *testing.T) {
	is := is.New(t)
	h := newPoolHarness(t, 0, 0)
	ctx := WithExchange(context.Background(), newPOST(false))
	is.NoErr(h.pool.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)))
	is.Equal(len(h.backends()), 0)
	is.NoErr(h.request("", newPOST(false)))
	is.NoErr(h.pool.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)))
	is.Equal(len(h.backends()[0].got.all()), 2) // to the server that exists
}
