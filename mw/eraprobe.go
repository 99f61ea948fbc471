package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ModernVersion is the protocol version of MCP's 2026-07-28 era the relay
// speaks, and the one its era probe asks for.
const ModernVersion = "2026-07-28"

// modernVersions are the modern versions the relay speaks, preferred
// first.
var modernVersions = []string{ModernVersion}

// EraChoice is how the relay picks the era of its server.
type EraChoice string

// The era choices.
const (
	// EraAuto probes: a server that answers server/discover as a
	// 2026-07-28 server is spoken to as one; any other gets the session
	// era (and, failing that, HTTP+SSE).
	EraAuto EraChoice = "auto"
	// EraModern speaks 2026-07-28 whatever the probe finds.
	EraModern EraChoice = "modern"
	// EraChoiceSession skips the probe: the session era over Streamable
	// HTTP (and, failing that, HTTP+SSE). Its name is "session"; the
	// constant is not EraSession, which is the Era of that name.
	EraChoiceSession EraChoice = "session"
)

// ParseEraChoice returns the EraChoice s names ("" is EraAuto).
func ParseEraChoice(s string) (EraChoice, error) {
	switch EraChoice(s) {
	case "", EraAuto:
		return EraAuto, nil
	case EraModern, EraChoiceSession:
		return EraChoice(s), nil
	}
	return "", fmt.Errorf("unknown era %q (want auto, modern or session)", s)
}

// DefaultProbeTimeout bounds the era probe's server/discover.
const DefaultProbeTimeout = 10 * time.Second

// EraProbeOptions configures an [EraProbe].
type EraProbeOptions struct {
	// Choice is how the era is picked; "" means EraAuto.
	Choice EraChoice
	// Conn is the connection the verdict is kept in ([Conn.SetEra],
	// [Conn.Discovered]). Required.
	Conn *Conn
	// Timeout bounds each server/discover of the probe; 0 means
	// DefaultProbeTimeout. Its clock is the context's (a test's fake
	// time runs it).
	Timeout time.Duration
	// Logger receives the verdict; nil discards.
	Logger *slog.Logger
}

// EraProbe is the relay's era fork: it finds out which era the server
// speaks, keeps the verdict for the process, and sends every message down
// the chain of that era. Its [EraProbe.Middleware] sits where the relay's
// two chains part (see the package documentation); the chain inside it is
// the session era's, the other one, the 2026-07-28 chain, is handed to it.
//
// The probe. The first request that needs the era — a session-era
// client's initialize, or any request of a 2026-07-28 client
// ([ClassifyEra]) — is held while the probe POSTs a server/discover at
// [ModernVersion] down the 2026-07-28 chain, under a minted id (its answer
// never reaches the client), each attempt bounded by the Timeout. The
// verdict follows MCP's rule for a dual-era client (never one code alone):
//
//   - a DiscoverResult listing a version of ours → 2026-07-28;
//   - an error of 2026-07-28's own (-32020, -32021), or a 404 carrying
//     -32601 → 2026-07-28, without a DiscoverResult;
//   - -32022 (unsupported version) whose data.supported names a version
//     of ours → the probe is sent once more at that version, and judged
//     again (a second -32022 means 2026-07-28 without a DiscoverResult);
//   - anything else — a plain 4xx, a 200 carrying -32601, a -32022 naming
//     none of ours, a DiscoverResult with no version of ours, a timeout,
//     a network failure → the session era, exactly as without a probe.
//
// The verdict goes into the Conn (SetEra, and Discovered with the
// DiscoverResult and the version); messages that came in meanwhile wait
// for it. A message before any request needing the era (a client that
// sends tools/call without initialize) takes the session era's chain and
// decides nothing. With EraChoiceSession nothing is probed; with
// EraModern the probe still runs, for the DiscoverResult, but the verdict
// is 2026-07-28 whatever it finds.
//
// Re-probing. A request of a session-era client that a 2026-07-28 server
// refuses with -32022 makes the probe run again (once at a time): when
// it finds a version of ours, the request is sent again, once, stamped
// with it. Otherwise the refusal is the answer.
//
// An EraProbe is safe for concurrent use; call Middleware once.
type EraProbe struct {
	o     EraProbeOptions
	log   *slog.Logger
	calls *Remap

	modern Handler // the 2026-07-28 chain's server-bound entry
	out    lateHandler

	mu      sync.Mutex
	decided bool
	probing chan struct{} // closed when the probe under way ends; nil when none
}

// NewEraProbe returns an EraProbe with no verdict yet (the session era's
// verdict, for EraChoiceSession).
func NewEraProbe(o EraProbeOptions) *EraProbe {
	if o.Choice == "" {
		o.Choice = EraAuto
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultProbeTimeout
	}
	p := &EraProbe{o: o, log: loggerOrDiscard(o.Logger), calls: NewRemap("era")}
	if o.Choice == EraChoiceSession {
		p.decided = true
		o.Conn.SetEra(EraSession)
	}
	return p
}

// Middleware returns the fork. The chain inside it (next) is the session
// era's; modern is the server-bound entry of the 2026-07-28 chain, whose
// client-bound exit must be [EraProbe.ModernClient].
func (p *EraProbe) Middleware(modern Handler) Middleware {
	p.modern = modern
	return func(next Duplex) Duplex {
		p.out.set(next.ToClient)
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if p.era(ctx, m) == EraStateless {
					return p.sendModern(ctx, m)
				}
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: &p.out,
		}
	}
}

// ModernClient returns the handler the 2026-07-28 chain delivers
// client-bound messages to: the probe's answers stop there, the rest goes
// on toward the client.
func (p *EraProbe) ModernClient() Handler {
	return HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if p.calls.Capture(m) {
			return nil
		}
		return p.out.Handle(ctx, m)
	})
}

// Era returns the era the probe settled on, and whether it did.
func (p *EraProbe) Era() (Era, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.o.Conn.Era(), p.decided
}

// needsEra reports whether m is a request that cannot be sent before the
// era is known.
func needsEra(m frame.Message) bool {
	return m.Kind() == frame.Request && (m.Method() == "initialize" || ClassifyEra(m) == EraStateless)
}

// era returns the era m goes to, probing first when m is the first
// request that needs it.
func (p *EraProbe) era(ctx context.Context, m frame.Message) Era {
	for {
		p.mu.Lock()
		switch {
		case p.decided:
			p.mu.Unlock()
			return p.o.Conn.Era()
		case p.probing != nil:
			wait := p.probing
			p.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return EraSession // the message is abandoned anyway
			}
			continue
		case !needsEra(m):
			p.mu.Unlock()
			return EraSession
		}
		done := make(chan struct{})
		p.probing = done
		p.mu.Unlock()

		era, disc, version, reason := p.probe(ctx, m)
		p.mu.Lock()
		p.probing = nil
		if ctx.Err() != nil {
			// A probe cut short by the message's own end decides nothing;
			// the next message that needs the era probes again.
			close(done)
			p.mu.Unlock()
			return EraSession // the message is abandoned anyway
		}
		if p.o.Choice == EraModern && era != EraStateless {
			p.log.Warn("server did not answer server/discover as a 2026-07-28 server; speaking 2026-07-28 anyway (--era modern)", "reason", reason)
			era, version = EraStateless, ModernVersion
		}
		p.o.Conn.Discovered(disc, version)
		p.o.Conn.SetEra(era)
		p.decided = true
		if era == EraStateless {
			p.log.Info("server speaks MCP "+version, "by", reason)
		} else {
			p.log.Info("server speaks the session era", "by", reason)
		}
		close(done)
		p.mu.Unlock()
	}
}

// sendModern sends m down the 2026-07-28 chain, probing again and sending
// once more when the server refuses m's version (see EraProbe).
func (p *EraProbe) sendModern(ctx context.Context, m frame.Message) error {
	err := p.modern.Handle(ctx, m)
	if !isUnsupportedVersion(err) || ClassifyEra(m) != EraSession || ctx.Err() != nil {
		return err
	}
	_, before := p.o.Conn.Discovery()
	version, ok := p.reprobe(ctx, m)
	if !ok {
		return err
	}
	p.log.Info("server refused MCP "+before+"; sending again at "+version, "method", m.Method(), "id", m.ID().String())
	return p.modern.Handle(ctx, m)
}

// reprobe runs the probe again, one at a time (a message that finds one
// under way waits for it and takes its verdict), and returns the modern
// version it settled on.
func (p *EraProbe) reprobe(ctx context.Context, m frame.Message) (string, bool) {
	p.mu.Lock()
	if wait := p.probing; wait != nil {
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return "", false
		}
		_, v := p.o.Conn.Discovery()
		return v, v != ""
	}
	done := make(chan struct{})
	p.probing = done
	p.mu.Unlock()
	init, _ := p.o.Conn.ClientInitialize()
	era, disc, version, reason := p.probe(ctx, init)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = nil
	close(done)
	if era != EraStateless {
		p.log.Warn("server refused the version of a request, and answers server/discover as no 2026-07-28 server now", "reason", reason)
		return "", false
	}
	p.o.Conn.Discovered(disc, version)
	return version, true
}

// probe sends server/discover and judges the answer: it returns the era,
// the DiscoverResult (when there was one), the modern version, and a few
// words on what decided. trigger is the request that needs the era (a
// session-era initialize lends the probe its capabilities and clientInfo).
func (p *EraProbe) probe(ctx context.Context, trigger frame.Message) (Era, frame.Message, string, string) {
	version := ModernVersion
	for attempt := 0; ; attempt++ {
		resp, err := p.discover(ctx, trigger, version)
		v := judgeDiscover(resp, err)
		if v.retryAt == "" {
			return v.era, v.result, v.version, v.reason
		}
		if attempt > 0 {
			return EraStateless, frame.Message{}, v.retryAt, "-32022 twice"
		}
		p.log.Debug("server/discover refused its version; asking again", "at", v.retryAt)
		version = v.retryAt
	}
}

// discover sends one server/discover at version, bounded by the timeout.
func (p *EraProbe) discover(ctx context.Context, trigger frame.Message, version string) (frame.Message, error) {
	var init frame.Message
	if trigger.Method() == "initialize" && ClassifyEra(trigger) == EraSession {
		init = trigger
	}
	params := metaObject([]metaEntry{{"_meta", metaObject(modernMetaEntries(init, version, ""))}})
	req := frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":` + string(params) + `}`)
	pctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	return p.calls.Call(pctx, p.modern, req, "")
}

// discoverVerdict is what one server/discover told (see judgeDiscover).
type discoverVerdict struct {
	era     Era
	result  frame.Message // the DiscoverResult, when 2026-07-28 by one
	version string        // the modern version, when 2026-07-28
	retryAt string        // set on a -32022 naming a version of ours: ask again
	reason  string
}

// judgeDiscover judges the answer to a server/discover: resp is the
// message that answered it (when the transport delivered one), err why
// it was not delivered (a *frame.StatusError carrying the server's
// JSON-RPC error, a timeout, …). See EraProbe for the rules.
func judgeDiscover(resp frame.Message, err error) discoverVerdict {
	session := func(why string) discoverVerdict { return discoverVerdict{era: EraSession, reason: why} }
	if err != nil {
		var st *frame.StatusError
		if !errors.As(err, &st) {
			if errors.Is(err, context.DeadlineExceeded) {
				return session("server/discover timed out")
			}
			return session("server/discover failed: " + err.Error())
		}
		m, perr := frame.Parse(st.Body)
		if perr != nil || m.Kind() != frame.Error {
			return session(fmt.Sprintf("server/discover answered HTTP %d", st.Code))
		}
		code, _ := m.ErrorCode()
		if code == -32601 && st.Code == http.StatusNotFound {
			return discoverVerdict{era: EraStateless, version: ModernVersion, reason: "HTTP 404 with -32601"}
		}
		v := judgeError(m)
		if v.era == EraSession {
			v.reason = fmt.Sprintf("server/discover answered HTTP %d with error %d", st.Code, code)
		}
		return v
	}
	switch resp.Kind() {
	case frame.Result:
		for _, got := range resp.Get("result.supportedVersions").Array() {
			for _, ours := range modernVersions {
				if got.Type == gjson.String && got.Str == ours {
					return discoverVerdict{era: EraStateless, result: resp, version: ours, reason: "server/discover"}
				}
			}
		}
		return session("server/discover lists no 2026-07-28 version")
	case frame.Error:
		v := judgeError(resp)
		if v.era == EraSession {
			code, _ := resp.ErrorCode()
			v.reason = fmt.Sprintf("server/discover answered error %d", code)
		}
		return v
	}
	return session("server/discover got no answer")
}

// judgeError judges a JSON-RPC error answering server/discover: the codes
// only a 2026-07-28 server uses mean 2026-07-28; -32022 asks to try again
// at a version of ours it lists.
func judgeError(m frame.Message) discoverVerdict {
	code, _ := m.ErrorCode()
	switch code {
	case frame.CodeHeaderMismatch, -32021:
		return discoverVerdict{era: EraStateless, version: ModernVersion, reason: fmt.Sprintf("error %d", code)}
	case -32022:
		for _, got := range m.Get("error.data.supported").Array() {
			for _, ours := range modernVersions {
				if got.Type == gjson.String && got.Str == ours {
					return discoverVerdict{era: EraStateless, retryAt: ours, reason: "error -32022"}
				}
			}
		}
	}
	return discoverVerdict{era: EraSession}
}

// isUnsupportedVersion reports whether err is a server's -32022 refusal.
func isUnsupportedVersion(err error) bool {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return false
	}
	m, perr := frame.Parse(st.Body)
	if perr != nil {
		return false
	}
	code, ok := m.ErrorCode()
	return ok && code == -32022
}
