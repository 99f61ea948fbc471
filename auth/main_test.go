package auth

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as two helper programs (see
// transporttest.RunProgram):
//
//   - "<binary> browser-helper <url>": what $BROWSER runs in tests; it
//     plays the user's browser with authtest.Visit.
//   - "refresh": a relay process racing a sibling for the token store
//     (see TestTwoProcessesShareOneRefresh).
//   - "<binary> token-command <dir>": a --bearer-token-command (see
//     command_test.go).
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"browser-helper": authtest.Browser,
		"refresh":        func([]string) int { return refreshChild() },
		"token-command":  tokenCommand,
	})
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// harness is a Client wired to a test server, with its outputs captured.
type harness struct {
	c      *Client
	srv    *authtest.Server
	log    *transporttest.SyncBuffer
	stderr *transporttest.SyncBuffer
	store  string
	clock  *fakeClock
	opened chan string // URLs the client asked to open (buffered)
}

// visitor returns an OpenURL that plays the browser at once.
func visitor(opened chan string) func(context.Context, string) error {
	return func(_ context.Context, u string) error {
		select {
		case opened <- u:
		default:
		}
		return authtest.Visit(u)
	}
}

// newHarness builds a Client for srv's MCP endpoint. mod adjusts the
// options (OpenURL defaults to visiting the URL at once).
func newHarness(t *testing.T, srv *authtest.Server, mod func(o *Options)) *harness {
	t.Helper()
	h := &harness{
		srv:    srv,
		log:    &transporttest.SyncBuffer{},
		stderr: &transporttest.SyncBuffer{},
		store:  filepath.Join(t.TempDir(), "mcp-stdio", "tokens.json"),
		clock:  newFakeClock(),
		opened: make(chan string, 16),
	}
	o := Options{
		ServerURL:  srv.MCPURL(),
		StorePath:  h.store,
		Stderr:     h.stderr,
		Logger:     slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:      h.clock,
		OpenURL:    visitor(h.opened),
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
	}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	t.Cleanup(func() {
		// A browser launcher ($BROWSER) the client started is reaped
		// before the test ends, as Run would, so goleak never sees its
		// reaping goroutine.
		c.waitLaunchers(launcherReapWait)
		c.http.CloseIdleConnections()
	})
	return h
}

// run starts c.Run and stops it when the test ends; it returns once Run
// is running.
func (h *harness) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	h.c.runHook = func() { close(started) }
	done := make(chan error, 1)
	go func() { done <- h.c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	<-started
}

// waitFlight waits for the sign-in under way, if any, and returns its
// error.
func (h *harness) waitFlight(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.c.WaitSignIn(ctx)
	if ctx.Err() != nil {
		t.Fatal("the sign-in did not end")
	}
	return err
}

// challenge returns a 401's header as the test server would send it.
func challenge(srv *authtest.Server) http.Header {
	h := http.Header{}
	h.Set("WWW-Authenticate", srv.Challenge())
	return h
}

// fakeClock is a Clock that moves only when told to.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	changed chan struct{} // closed and replaced when waiters change
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC), changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Advance moves the clock by d and fires the waiters that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- w.at
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// WaitForWaiter blocks until someone waits for the time at, failing the
// test after 10 s.
func (c *fakeClock) WaitForWaiter(t *testing.T, at time.Time) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for _, w := range c.waiters {
			if w.at.Equal(at) {
				c.mu.Unlock()
				return
			}
		}
		ch := c.changed
		var pending []string
		for _, w := range c.waiters {
			pending = append(pending, w.at.Sub(c.now).String())
		}
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			sort.Strings(pending)
			t.Fatalf("nobody waits for now+%s (waiters at %v)", at.Sub(c.Now()), pending)
		}
	}
}

// AdvanceWhenWaiting waits until someone waits for now+d, then advances d.
func (c *fakeClock) AdvanceWhenWaiting(t *testing.T, d time.Duration) {
	t.Helper()
	c.WaitForWaiter(t, c.Now().Add(d))
	c.Advance(d)
}
