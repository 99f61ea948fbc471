package mw

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// CloseOnCancel returns the stage that cancels a request the way MCP
// 2026-07-28 does over HTTP: by closing the request's response stream. A
// 2026-07-28 server takes no notifications from a client over HTTP, so the
// client's notifications/cancelled (of either era) is not sent: the stage
// aborts the request it names, which is in flight under a context of the
// stage's, and the transport drops the connection that carries its
// answer. The aborted request's Handle returns [frame.ErrCancelled] (no
// answer is due), and the [CancelFilter] outside drops anything that
// arrives for it later.
//
// It sits first in the relay's chain for a 2026-07-28 server (see the
// package documentation), so a cancel reaches the request whole — its
// pages, its retries, the MRTR rounds made on its behalf. It acts while
// the connection ([ConnOf]) speaks 2026-07-28; a cancel naming no request
// in flight is dropped. Client-bound traffic passes untouched.
func CloseOnCancel(logger *slog.Logger) Middleware {
	log := loggerOrDiscard(logger)
	return func(next Duplex) Duplex {
		s := &closeOnCancel{next: next, log: log, inflight: make(map[frame.ID][]*inflightRequest)}
		return Duplex{ToServer: HandlerFunc(s.toServer), ToClient: next.ToClient}
	}
}

type closeOnCancel struct {
	next Duplex
	log  *slog.Logger

	mu       sync.Mutex
	inflight map[frame.ID][]*inflightRequest
}

func (s *closeOnCancel) toServer(ctx context.Context, m frame.Message) error {
	c := ConnOf(ctx)
	if c == nil || c.Era() != EraStateless {
		return s.next.ToServer.Handle(ctx, m)
	}
	switch m.Kind() {
	case frame.Request:
		return s.request(ctx, m)
	case frame.Notification:
		if m.Method() != cancelMethod {
			break
		}
		id, ok := cancelledRequestID(m)
		s.mu.Lock()
		running := slices.Clone(s.inflight[id])
		s.mu.Unlock()
		if !ok || len(running) == 0 {
			s.log.Debug("cancel for no request in flight dropped", "request", id.String())
			return nil
		}
		s.log.Debug("cancelled: closing the request's stream", "request", id.String())
		for _, r := range running {
			r.cancel(frame.ErrCancelled)
		}
		return nil
	}
	return s.next.ToServer.Handle(ctx, m)
}

func (s *closeOnCancel) request(ctx context.Context, m frame.Message) error {
	id := m.ID()
	ctx, cancel := context.WithCancelCause(ctx)
	r := &inflightRequest{cancel: cancel}
	s.mu.Lock()
	s.inflight[id] = append(s.inflight[id], r)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if rs := slices.DeleteFunc(s.inflight[id], func(x *inflightRequest) bool { return x == r }); len(rs) > 0 {
			s.inflight[id] = rs
		} else {
			delete(s.inflight, id)
		}
		s.mu.Unlock()
		cancel(nil)
	}()
	err := s.next.ToServer.Handle(ctx, m)
	if errors.Is(context.Cause(ctx), frame.ErrCancelled) {
		return frame.ErrCancelled
	}
	return err
}
