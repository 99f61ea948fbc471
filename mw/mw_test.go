package mw

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is a Handler that keeps every message it is given.
type recorder struct {
	mu   sync.Mutex
	msgs []frame.Message
}

func (r *recorder) Handle(_ context.Context, m frame.Message) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	return nil
}

// all returns the messages received so far.
func (r *recorder) all() []frame.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]frame.Message(nil), r.msgs...)
}

// lines returns the bytes of the messages received so far.
func (r *recorder) lines() []string {
	var out []string
	for _, m := range r.all() {
		out = append(out, m.String())
	}
	return out
}

// fakeServer is a transport for tests: it records what it is sent and
// answers through answer, handing the messages it returns client-bound
// before returning the error, as a real transport does.
type fakeServer struct {
	up     Late // the chain's client-bound entry
	answer func(ctx context.Context, m frame.Message) ([]frame.Message, error)

	sent recorder
}

func (s *fakeServer) Handle(ctx context.Context, m frame.Message) error {
	s.sent.Handle(ctx, m)
	if s.answer == nil {
		return nil
	}
	out, err := s.answer(ctx, m)
	for _, o := range out {
		if herr := s.up.Handle(ctx, o); herr != nil {
			return herr
		}
	}
	return err
}

// pipeline wires ms between a recorder standing for the client and s.
func pipeline(s *fakeServer, ms ...Middleware) (toServer Handler, client *recorder) {
	client = &recorder{}
	d := Chain(ms...)(Duplex{ToServer: s, ToClient: client})
	s.up.Bind(d.ToClient)
	return d.ToServer, client
}

// answerWith answers request m with the raw result.
func answerWith(m frame.Message, raw string) frame.Message {
	return frame.ResultResponse(m.ID(), []byte(raw))
}

// testLogger returns a logger writing text lines, debug included, to a
// buffer.
func testLogger() (*slog.Logger, *transporttest.SyncBuffer) {
	b := &transporttest.SyncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}
