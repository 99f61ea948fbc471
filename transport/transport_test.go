package transport

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// collector is a Sink that records what it is given.
type collector struct {
	mu   sync.Mutex
	msgs []frame.Message
	got  chan frame.Message // every delivery is also sent here when non-nil
}

func newCollector() *collector { return &collector{got: make(chan frame.Message, 1024)} }

func (c *collector) Handle(ctx context.Context, m frame.Message) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
	if c.got != nil {
		c.got <- m
	}
	return nil
}

// lines returns the delivered messages' bytes.
func (c *collector) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.msgs))
	for i, m := range c.msgs {
		out[i] = m.String()
	}
	return out
}

func (c *collector) all() []frame.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame.Message(nil), c.msgs...)
}

// newServer starts a loopback server and arranges for it and the client's
// idle connections to be closed at the end of the test.
func newServer(t testing.TB, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	client := NewHTTPClient(HTTPOptions{})
	t.Cleanup(func() {
		client.CloseIdleConnections()
		srv.Close()
	})
	return srv, client
}

// deadAddr returns a loopback address nobody listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// debugLogger returns a logger writing text lines, debug included, to w.
func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// flushWrite writes s and flushes it to the client.
func flushWrite(w http.ResponseWriter, s string) {
	_, _ = w.Write([]byte(s))
	w.(http.Flusher).Flush()
}
