// The drain of the serve pipeline: what a gateway told to stop (SIGTERM)
// does before its children are stopped.

package pipeline

import (
	"context"
	"errors"
	"time"
)

// Draining reports whether the gateway is draining or has drained: it
// turns true when [Server.Drain] (or [Server.Close]) is first called, and
// stays true. A readiness probe reports it, so that a load balancer stops
// sending new clients here.
func (s *Server) Draining() bool { return s.draining.Load() }

// Drain drains the gateway, as on SIGTERM, and returns when the drain is
// over:
//
//   - [Server.Draining] turns true, and a new session is refused with 503,
//     Retry-After and a JSON-RPC error naming the drain (see
//     mw.RefuseNewSessions): a session-era initialize without
//     Mcp-Session-Id, a new HTTP+SSE stream.
//   - Everything else is still served: the requests, notifications and
//     responses of the sessions already open (a request waiting for its
//     client can finish), and 2026-07-28 requests, since a load balancer
//     goes on sending for a while after the readiness probe fails.
//   - The 2026-07-28 listen streams get their graceful end at once (their
//     final result), so that their clients listen elsewhere: those serve
//     answers for a session-era child, and those a dual-era child serves
//     itself (it is told to stop them with notifications/cancelled).
//   - The drain is over when no request is in flight (no POST is being
//     answered, nor a POST of HTTP+SSE carrying requests; it may be at
//     once), and returns nil; or
//     at DrainTimeout, returning an error matching
//     context.DeadlineExceeded; or when ctx ends, returning ctx's error.
//   - Once it is over, however it ended, nothing new is taken (see
//     mw.RefuseAfterDrain): a request or GET of a session gets 404, so
//     that its client starts a new session elsewhere, and a 2026-07-28
//     request 503 with Retry-After. Close would only cut them. A request
//     taken just before that is waited for, within DrainTimeout.
//
// It logs one line at the start and one at the end, with counts. Sessions
// and the streams already open are left open: [Server.Close] ends them (a
// request still waiting gets an error) and stops the children. Only the
// first call drains; later ones wait for it to end and return what it
// returned.
func (s *Server) Drain(ctx context.Context) error {
	s.drainOnce.Do(func() { s.drainErr = s.drain(ctx) })
	return s.drainErr
}

// drain is Drain's work, done once.
func (s *Server) drain(ctx context.Context) error {
	start := time.Now()
	s.draining.Store(true)
	s.log.Info("drain started: new sessions are refused, open sessions and 2026-07-28 requests are still served",
		"sessions", s.sessions.Len(), "pooled_children", s.pool.Len(), "in_flight", s.http.InFlight(), "timeout", s.cfg.DrainTimeout)
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	defer cancel()
	// A listen lasts until it is ended: end them first, gracefully.
	err := errors.Join(s.sharedListens.Close(dctx), s.listens.Close(dctx))
	if err == nil {
		err = s.http.WaitIdle(dctx)
	}
	// From here on a new request would only be cut when Close ends the
	// sessions and stops the children: it is refused before it is taken
	// (mw.RefuseAfterDrain). A request is counted in flight before it
	// reaches that stage, so one that passed the stage just before this
	// store is counted by now, and the second wait sees it through.
	s.drained.Store(true)
	if err == nil {
		err = s.http.WaitIdle(dctx)
	}
	outcome := "idle"
	switch {
	case err == nil:
	case ctx.Err() != nil:
		outcome, err = "interrupted", ctx.Err()
	default:
		outcome, err = "timeout", errors.Join(context.DeadlineExceeded, errors.New("requests still in flight at the drain timeout"))
	}
	s.log.Info("drain ended", "outcome", outcome, "in_flight", s.http.InFlight(), "sessions", s.sessions.Len(),
		"pooled_children", s.pool.Len(), "took", time.Since(start).Round(time.Millisecond))
	return err
}
