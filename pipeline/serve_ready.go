// Readiness: whether this serve should get new clients now, for the
// readiness probe of AdminHandler's /readyz.

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/mw"
)

// Readiness probes (see [Server.Ready]).
const (
	// ReadyProbeInterval is the least time between two probe starts of the
	// server command that [Server.Ready] makes while the last start
	// failed or none was made.
	ReadyProbeInterval = 5 * time.Second
	// readyProbeTimeout bounds one probe: a start and its handshake.
	readyProbeTimeout = 10 * time.Second
	// readyProbeWait is how long /readyz waits for a probe under way
	// before it answers: less than the 1 s a Kubernetes probe waits by
	// default.
	readyProbeWait = 500 * time.Millisecond
)

// readiness is what a Server knows of its server command: how the last
// start of a child ended.
type readiness struct {
	now func() time.Time

	mu        sync.Mutex
	known     bool          // a start has ended, either way
	err       error         // why the last start failed; nil after a success
	probing   chan struct{} // closed when the probe under way ends; nil when none
	lastProbe time.Time     // when the last probe began
}

// record takes the outcome of a child's start: nil once it answered, or
// why it could not.
func (r *readiness) record(err error) {
	r.mu.Lock()
	r.known, r.err = true, err
	r.mu.Unlock()
}

// Ready reports whether the server should be given new clients now: nil
// when it should, else an error saying in one line why not —
//
//   - it is draining (see [Server.Draining]);
//   - every session is busy (MaxSessions alive or starting, none idle to
//     give way), so that an initialize would get 503; not with
//     ModernOnly, which has none;
//   - every 2026-07-28 server process is busy (MaxModernChildren alive,
//     none idle), so that a new principal would get 503;
//   - the last start of a server process failed — the command could not
//     run, or the process exited before it wrote its first message (its
//     answer to the handshake): a command such as `false` — or none has
//     been made yet. Then Ready starts a probe, at most one every
//     [ReadyProbeInterval]: a child started and handshaken as a
//     2026-07-28 pooled one is, then closed; its outcome, like that of
//     every start for a client, decides until the next. A command that
//     starts again turns the server ready without client traffic.
//
// It is safe for concurrent use and does not block.
func (s *Server) Ready() error {
	if s.Draining() {
		return errors.New("draining: the server is shutting down")
	}
	if !s.cfg.ModernOnly && s.sessions.Full() {
		return fmt.Errorf("every session is busy (%d, the most allowed): none is idle to give way to a new one", s.sessions.Max())
	}
	if s.pool.Full() {
		return fmt.Errorf("every 2026-07-28 server process is busy (%d, the most allowed)", s.pool.Max())
	}
	r := &s.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known && r.err == nil {
		return nil
	}
	if r.probing == nil && (r.lastProbe.IsZero() || r.now().Sub(r.lastProbe) >= ReadyProbeInterval) {
		s.startProbeLocked()
	}
	if !r.known {
		return errors.New("the server command has not been started yet")
	}
	return fmt.Errorf("the last start of the server command failed: %v", r.err)
}

// readyWait is Ready, but when a probe is under way it waits for it, up
// to readyProbeWait or the end of ctx, before it judges.
func (s *Server) readyWait(ctx context.Context) error {
	err := s.Ready()
	if err == nil {
		return nil
	}
	s.ready.mu.Lock()
	probing := s.ready.probing
	s.ready.mu.Unlock()
	if probing == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyProbeWait)
	defer cancel()
	select {
	case <-probing:
		return s.Ready()
	case <-ctx.Done():
		return err
	}
}

// startProbeLocked starts a probe of the server command; s.ready.mu is
// held.
func (s *Server) startProbeLocked() {
	r := &s.ready
	done := make(chan struct{})
	r.probing, r.lastProbe = done, r.now()
	s.probes.Add(1)
	go func() {
		defer s.probes.Done()
		s.probe()
		r.mu.Lock()
		r.probing = nil
		r.mu.Unlock()
		close(done)
	}()
}

// probe starts a child, performs the handshake a pooled child gets, and
// closes it; the start's outcome is recorded as any start's is.
func (s *Server) probe() {
	ctx, cancel := context.WithTimeout(s.life, readyProbeTimeout)
	defer cancel()
	log := s.log.With("probe", "readiness")
	c, _, err := s.handshakeChild(ctx, mw.NewConn(mw.EraUnknown), "[probe] ", log, s.childAnswers(log))
	if err != nil {
		log.Warn("the server command cannot be started", "err", err)
		return
	}
	_ = c.Close(ctx)
}
