package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// CheckResult is what a connectivity check learned from the server.
type CheckResult struct {
	ServerName      string
	ServerVersion   string
	ProtocolVersion string
	Tools           bool
	Resources       bool
	Prompts         bool
	SessionID       string
	Transport       string // the transport that answered
	// Era is the era the check spoke to the server, as a session-era
	// host ([mw.Era.String]): the session era when the server answered
	// its initialize, or 2026-07-28 when the server speaks only that era
	// (or --era modern said so) and the initialize was answered from
	// server/discover (ProtocolVersion is then the modern version).
	Era string
	// EraReason says what decided Era: what the server answered.
	EraReason string
}

// checkRunnerGrace bounds how long Check waits for the reason the HTTP+SSE
// stream stopped, after a send found it gone.
const checkRunnerGrace = time.Second

// checkHandshake is the check's handshake: the gateway's own
// (mw.InitializeWith), at the newest session-era revision, declaring no
// capabilities (the check can honour none of the server's requests),
// clientInfo mcp-stdio check. Its outcome is not logged: the check prints
// it.
var checkHandshake = mw.HandshakeOptions{ClientName: "mcp-stdio", ClientVersion: "check", NoCapabilities: true}

// errNoAnswer means the check's chain returned without answering its
// initialize.
var errNoAnswer = errors.New("no answer to initialize")

// Check makes the gateway's own session-era handshake (mw.InitializeWith:
// initialize, then notifications/initialized; recorded on the relay's
// connection) with the server cfg names through the relay's
// own chain and transport (auto falls back to HTTP+SSE as the relay does;
// re-authorisation applies as it would), reports what the server said on
// w, and ends the session it opened. It is quick: one attempt (unless
// cfg.Retry says otherwise), and the HTTP+SSE stream is not tried again
// after its first failure. A failure is reported on one line as an
// [Unreachable] — status, URL, likely cause, and the server's own words
// (one line of them, at most 200 bytes, with the credentials we sent and
// anything shaped like a bearer token blanked: servers echo them in error
// pages) — and returned. It returns an error when the server could not be
// reached or did not answer initialize with a result.
func Check(ctx context.Context, cfg RelayConfig, w io.Writer) (CheckResult, error) {
	if cfg.Retry.Attempts == 0 {
		cfg.Retry.Attempts = 1
	}
	cfg.defaults()
	var res CheckResult
	answer := &checkAnswer{}
	r, err := newRelay(cfg, answer, true)
	if err != nil {
		return res, err
	}
	ctx = mw.WithConn(ctx, r.conn)
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	r.start(ctx, stopSending)
	// sendErr is the chain's own failure to carry the initialize, which
	// the check explains; a failure after it (an error answer, a failed
	// notifications/initialized) is the handshake's.
	var sendErr error
	call := func(ctx context.Context, req frame.Message) (frame.Message, error) {
		// The check's initialize goes out under id 1, as it always has:
		// the handshake's own id is a placeholder for a Remap to replace.
		req, err := req.WithID(checkRequestID)
		if err != nil {
			return frame.Message{}, err
		}
		answer.expect(req.ID())
		if sendErr = r.chain.ToServer.Handle(ctx, req); sendErr != nil {
			return frame.Message{}, sendErr
		}
		m := answer.get()
		if !m.Kind().IsResponse() {
			sendErr = errNoAnswer
			return frame.Message{}, errNoAnswer
		}
		return m, nil
	}
	m, err := mw.InitializeWith(sendCtx, r.chain.ToServer, call, checkHandshake)
	switch {
	case sendCtx.Err() != nil && ctx.Err() == nil:
		<-r.runDone // the background work failed and stopped the send: it ends now
	case errors.Is(sendErr, frame.ErrUnavailable):
		// The HTTP+SSE stream stopped (or stayed down as long as a send
		// may wait): when it stopped because it failed, its error, which
		// is on its way, says more.
		select {
		case <-r.runDone:
		case <-time.After(checkRunnerGrace):
		}
	}
	select {
	case <-r.runDone: // the background work failed first (no HTTP+SSE endpoint)
		if r.runErr != nil {
			sendErr = r.runErr
		}
	default:
	}
	defer r.stop(ctx)
	var refused *mw.InitializeRefusedError
	switch {
	case errors.Is(sendErr, errNoAnswer):
		fmt.Fprintln(w, "✗ no answer to initialize")
		return res, sendErr
	case sendErr != nil:
		if u := cfg.explain(sendErr); u != nil {
			fmt.Fprintf(w, "✗ %s\n", u)
			return res, u
		}
		fmt.Fprintf(w, "✗ %v\n", sendErr)
		return res, sendErr
	case errors.As(err, &refused):
		code, _ := refused.Answer.ErrorCode()
		fmt.Fprintf(w, "✗ initialize failed: error %d: %s\n", code, oneLineText(refused.Answer.Get("error.message").String()))
		return res, fmt.Errorf("initialize failed: error %d", code)
	case err != nil:
		// The handshake failed after its initialize was answered (its
		// notifications/initialized was refused): diagnosed as a refused
		// initialize is.
		if u := cfg.explain(err); u != nil {
			fmt.Fprintf(w, "✗ the gateway's notifications/initialized: %s\n", u)
			return res, fmt.Errorf("the gateway's notifications/initialized: %w", u)
		}
		fmt.Fprintf(w, "✗ %v\n", err)
		return res, err
	}
	res = CheckResult{
		ServerName:      m.Get("result.serverInfo.name").String(),
		ServerVersion:   m.Get("result.serverInfo.version").String(),
		ProtocolVersion: m.Get("result.protocolVersion").String(),
		Tools:           m.Get("result.capabilities.tools").Exists(),
		Resources:       m.Get("result.capabilities.resources").Exists(),
		Prompts:         m.Get("result.capabilities.prompts").Exists(),
		SessionID:       r.session.ID(),
		Transport:       cfg.Transport,
		Era:             r.conn.Era().String(),
		EraReason:       r.conn.EraReason(),
	}
	if r.conn.Era() == mw.EraStateless {
		// The initialize was answered from server/discover: the version
		// that matters is the modern one.
		_, res.ProtocolVersion = r.conn.Discovery()
		res.Transport = TransportStreamable
	}
	yes := map[bool]string{true: "yes", false: "no"}
	fmt.Fprintln(w, "✓ Connected")
	fmt.Fprintf(w, "  server:    %s %s\n", oneLineText(res.ServerName), oneLineText(res.ServerVersion))
	fmt.Fprintf(w, "  protocol:  %s\n", oneLineText(res.ProtocolVersion))
	if res.EraReason != "" {
		fmt.Fprintf(w, "  era:       %s (%s)\n", res.Era, oneLineText(res.EraReason))
	} else {
		fmt.Fprintf(w, "  era:       %s\n", res.Era)
	}
	fmt.Fprintf(w, "  tools:     %s\n  resources: %s\n  prompts:   %s\n", yes[res.Tools], yes[res.Resources], yes[res.Prompts])
	if res.SessionID != "" {
		fmt.Fprintf(w, "  session:   %s\n", oneLineText(res.SessionID))
	}
	return res, nil
}

// checkRequestID is the id of the check's initialize on the wire.
const checkRequestID frame.ID = "1"

// checkAnswer is the client side of the check's chain: it keeps the
// answer to the request it expects and drops everything else.
type checkAnswer struct {
	mu   sync.Mutex
	want frame.ID
	m    frame.Message
}

// expect makes a keep the answer to the request id from now on.
func (a *checkAnswer) expect(id frame.ID) {
	a.mu.Lock()
	a.want, a.m = id, frame.Message{}
	a.mu.Unlock()
}

func (a *checkAnswer) Handle(_ context.Context, m frame.Message) error {
	if m.Kind().IsResponse() {
		a.mu.Lock()
		if m.ID() == a.want {
			a.m = m
		}
		a.mu.Unlock()
	}
	return nil
}

// get returns the answer kept, the zero Message when none came.
func (a *checkAnswer) get() frame.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m
}

// oneLineText makes a server-supplied string safe to print on one line of a
// terminal: frame.PeerText, at most 200 bytes.
func oneLineText(s string) string { return frame.PeerText(s, 200) }
