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
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// ModernVersion is the protocol version of MCP's 2026-07-28 era the relay
// speaks, and the one its era probe asks for.
const ModernVersion = mcp.ModernVersion

// modernVersions are the modern versions the relay speaks, preferred
// first. Never written.
var modernVersions = mcp.StatelessVersions()

// EraChoice is how the relay picks the era it speaks to its server.
type EraChoice string

// The era choices.
const (
	// EraAuto speaks the host's own era whenever the server speaks it
	// too, and bridges only when it does not (see [EraProbe]).
	EraAuto EraChoice = "auto"
	// EraModern speaks 2026-07-28 to the server whatever the host
	// speaks: a session-era host is always bridged.
	EraModern EraChoice = "modern"
	// EraChoiceSession skips the probe: the session era over Streamable
	// HTTP (and, failing that, HTTP+SSE), a 2026-07-28 host bridged to
	// it. Its name is "session"; the constant is not EraSession, which is
	// the Era of that name.
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
	// Conn is the connection the verdict is kept in ([Conn.SetEraBy],
	// [Conn.Discovered]). Required.
	Conn *Conn
	// Timeout bounds each server/discover of the probe; 0 means
	// DefaultProbeTimeout. Its clock is the context's (a test's fake
	// time runs it).
	Timeout time.Duration
	// ClientVersion is the version of the clientInfo the probe declares
	// for the gateway ("mcp-stdio") before the host said who it is; ""
	// means "unknown".
	ClientVersion string
	// Logger receives the verdict; nil discards.
	Logger *slog.Logger
}

// EraProbe is the relay's era fork: it decides which era the relay
// speaks to its server, from what both sides say, keeps the verdict for
// the process, and sends every message down the chain of that era. Its
// [EraProbe.Middleware] sits where the relay's two chains part (see the
// package documentation); the chain inside it is the session era's, the
// other one, the 2026-07-28 chain, is handed to it.
//
// The rule: the host's own era whenever the server speaks it, a bridge
// only when it does not. The first request that needs the era decides,
// while the requests that come meanwhile wait (and, while a session-era
// host's initialize is under way, its other messages go to the session
// era's chain):
//
//   - A session-era host's initialize goes to the session era's chain
//     first, byte for byte as without a probe. When the server answers it
//     (a result, or an error of its own), the relay speaks the session
//     era — to a dual-era server too. When the server refuses it in a way
//     a server without the session era does — an HTTP 4xx other than 401,
//     403, 407, 408 and 429, or an error -32601, -32020, -32021 or -32022
//     — the probe asks server/discover (below): a 2026-07-28 server means
//     the host is bridged to 2026-07-28, and its initialize is answered
//     from the DiscoverResult instead; anything else leaves the refusal
//     as the answer. A network failure, 401 or 403 decides nothing: the
//     initialize gets its failure, and the next one decides.
//   - A 2026-07-28 host's first request (its server/discover or any
//     request whose _meta names the version, [ClassifyEra]) is held while
//     the probe asks server/discover: a 2026-07-28 server is spoken to in
//     2026-07-28, its lines passing through; a server that is not one
//     gets the session era, the host bridged to it. A probe that decides
//     nothing (below) sends the request to the 2026-07-28 chain, the
//     host's own era, undecided.
//
// The probe POSTs a server/discover at [ModernVersion] down the 2026-07-28
// chain, under a minted id (its answer never reaches the host), each
// attempt bounded by the Timeout, with the client's clientInfo and
// capabilities as the host declared them (its initialize, or its
// requests' _meta), else the gateway's own clientInfo. The answer is
// judged by what the server says, never by one status code:
//
//   - a DiscoverResult listing a version of ours → 2026-07-28;
//   - an error only 2026-07-28 gives (-32020, -32021), at any status →
//     2026-07-28, without a DiscoverResult;
//   - -32022 (unsupported version) whose data.supported names a version
//     of ours → the probe is sent once more at that version, and judged
//     again (a second -32022 means 2026-07-28 without a DiscoverResult);
//   - -32601 (method not found), at any status — 200, 400, 404 — means
//     the server does not know server/discover: not 2026-07-28;
//   - any other answer — another status or error, a DiscoverResult with
//     no version of ours, a timeout — means not 2026-07-28;
//   - a network failure, 401, 403, 407, 408, 429, 502, 503 or 504 says
//     nothing of the era: it decides nothing.
//
// The verdict goes into the Conn (SetEraBy with the reason, and
// Discovered with the DiscoverResult and the version) and is logged, with
// what decided it. A message before any request that needs the era (a
// client that sends tools/call without initialize) takes the session
// era's chain and decides nothing.
//
// With EraChoiceSession nothing is probed: the session era. With
// EraModern the probe goes first for every host, for the DiscoverResult,
// and the verdict is 2026-07-28 whatever it finds (a session-era host's
// initialize gets the probe's failure when the probe decided nothing).
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
	probing chan struct{} // closed when the decision under way ends; nil when none
	// sessionFirst: the decision under way is a session-era host's
	// initialize on the session era's chain; what needs no era (the
	// host's answers to the server's requests, its notifications) goes
	// there meanwhile instead of waiting.
	sessionFirstUnderway bool
	// While a session-era host's initialize goes first, an error answer
	// to it that names the era (see eraSignal) is held here instead of
	// reaching the host, until the probe has judged.
	holdID  frame.ID
	holding bool
	held    frame.Message
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
		o.Conn.SetEraBy(EraSession, "--era session")
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
				return p.toServer(ctx, m, next.ToServer)
			}),
			ToClient: HandlerFunc(p.sessionClient),
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

// sessionClient is the session era's chain's client-bound exit: it holds
// the answer to the initialize under way when that answer names the era
// (see EraProbe), and passes everything else on.
func (p *EraProbe) sessionClient(ctx context.Context, m frame.Message) error {
	if m.Kind() == frame.Error {
		p.mu.Lock()
		if p.holding && p.held.Len() == 0 && m.ID() == p.holdID && eraSignal(m) {
			p.held = m
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
	return p.out.Handle(ctx, m)
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
	return m.Kind() == frame.Request && (m.Method() == mcp.MethodInitialize || ClassifyEra(m) == EraStateless)
}

// isSessionInitialize reports whether m is a session-era client's
// initialize.
func isSessionInitialize(m frame.Message) bool {
	return m.Kind() == frame.Request && m.Method() == mcp.MethodInitialize && ClassifyEra(m) == EraSession
}

// toServer sends m down the chain of its era (session is the session
// era's), deciding the era first when m is the first request that needs
// it.
func (p *EraProbe) toServer(ctx context.Context, m frame.Message, session Handler) error {
	if m.Kind() == frame.Request && ClassifyEra(m) == EraStateless {
		p.o.Conn.NoteClientMeta(m)
	}
	for {
		p.mu.Lock()
		switch {
		case p.decided:
			p.mu.Unlock()
			return p.send(ctx, m, p.o.Conn.Era(), session)
		case p.probing != nil && p.sessionFirstUnderway && !needsEra(m):
			p.mu.Unlock()
			return session.Handle(ctx, m)
		case p.probing != nil:
			wait := p.probing
			p.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return session.Handle(ctx, m) // the message is abandoned anyway
			}
			continue
		case !needsEra(m):
			p.mu.Unlock()
			return session.Handle(ctx, m)
		}
		done := make(chan struct{})
		p.probing = done
		first := p.o.Choice == EraAuto && isSessionInitialize(m)
		p.sessionFirstUnderway = first
		p.mu.Unlock()
		var (
			sent bool
			err  error
			era  Era
		)
		if first {
			sent, err, era = p.sessionFirst(ctx, m, session)
		} else {
			sent, err, era = p.probeFirst(ctx, m)
		}
		// The messages that waited go on once the era is decided, not
		// after m's answer.
		p.mu.Lock()
		p.probing = nil
		p.sessionFirstUnderway = false
		close(done)
		p.mu.Unlock()
		if sent {
			return err
		}
		return p.send(ctx, m, era, session)
	}
}

// send sends m down the chain of era.
func (p *EraProbe) send(ctx context.Context, m frame.Message, era Era, session Handler) error {
	if era == EraStateless {
		return p.sendModern(ctx, m)
	}
	return session.Handle(ctx, m)
}

// decide records the verdict era, for the reason why, with what the probe
// found of a 2026-07-28 server (disc and version), and logs it. The
// caller holds the decision (p.probing).
func (p *EraProbe) decide(era Era, why string, disc frame.Message, version string) {
	if era == EraStateless {
		p.o.Conn.Discovered(disc, version)
	}
	p.o.Conn.SetEraBy(era, why)
	p.mu.Lock()
	p.decided = true
	p.mu.Unlock()
	p.log.Info("speaking "+eraName(era)+" to the server", "why", why)
}

// eraName names era in a sentence: "the session era", "MCP 2026-07-28".
func eraName(era Era) string {
	if era == EraStateless {
		return "MCP " + ModernVersion
	}
	return "the " + era.String()
}

// sessionFirst sends a session-era host's initialize m to the session
// era's chain, and bridges the host to 2026-07-28 only when the server
// refuses it as a server without the session era does and answers
// server/discover as a 2026-07-28 server (see EraProbe). It returns
// whether m was answered (sent, and the error of its sending), or else
// the era m is to be sent in.
func (p *EraProbe) sessionFirst(ctx context.Context, m frame.Message, session Handler) (sent bool, _ error, _ Era) {
	p.mu.Lock()
	p.holdID, p.holding, p.held = m.ID(), true, frame.Message{}
	p.mu.Unlock()
	err := session.Handle(ctx, m)
	p.mu.Lock()
	held := p.held
	p.holding, p.held = false, frame.Message{}
	p.mu.Unlock()
	// answered ends m with what the session era's chain made of it.
	answered := func() (bool, error, Era) {
		if held.Len() > 0 {
			if derr := p.out.Handle(ctx, held); derr != nil {
				return true, derr, EraSession
			}
		}
		return true, err, EraSession
	}

	refusal := ""
	switch {
	case ctx.Err() != nil:
		return answered()
	case held.Len() > 0:
		code, _ := held.ErrorCode()
		refusal = fmt.Sprintf("error %d", code)
	case err == nil:
		p.decide(EraSession, "the host speaks the session era, and the server answered its initialize", frame.Message{}, "")
		return true, nil, EraSession
	default:
		var ok bool
		if refusal, ok = initializeRefusal(err); !ok {
			p.log.Debug("era not decided: the host's initialize failed", "err", err)
			return true, err, EraSession
		}
	}

	v := p.probe(ctx, m)
	if ctx.Err() != nil {
		return answered()
	}
	if v.undecided || v.era != EraStateless {
		p.log.Info("era not decided: the server refused the host's initialize with "+refusal+", and "+v.reason, "why", "the refusal is the host's answer")
		return answered()
	}
	p.decide(EraStateless, "the host speaks the session era; the server refused its initialize with "+refusal+", and "+v.reason+": bridging the host to "+v.version, v.result, v.version)
	return false, nil, EraStateless
}

// initializeRefusal reports whether err, the failure of a session-era
// initialize, is a refusal a server without the session era may give (an
// HTTP 4xx but 401, 403, 407, 408 and 429), and says which.
func initializeRefusal(err error) (string, bool) {
	var st *frame.StatusError
	if !errors.As(err, &st) || st.Code < 400 || st.Code > 499 {
		return "", false
	}
	switch st.Code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return "", false
	}
	if m, perr := frame.Parse(st.Body); perr == nil && m.Kind() == frame.Error {
		code, _ := m.ErrorCode()
		return fmt.Sprintf("HTTP %d and error %d", st.Code, code), true
	}
	return fmt.Sprintf("HTTP %d", st.Code), true
}

// eraSignal reports whether m, an error answering a session-era
// initialize, says the server does not speak the session era: it does
// not know the method (-32601), or answers with an error of 2026-07-28
// (-32020, -32021, -32022).
func eraSignal(m frame.Message) bool {
	code, ok := m.ErrorCode()
	if !ok {
		return false
	}
	switch code {
	case frame.CodeMethodNotFound, frame.CodeHeaderMismatch, frame.CodeMissingCapability, frame.CodeUnsupportedVersion:
		return true
	}
	return false
}

// probeFirst decides the era with a server/discover before m is sent: m is
// a 2026-07-28 host's request, or (with EraModern) any request that needs
// the era. It returns whether m was answered (with the error of its
// sending), or else the era m is to be sent in.
func (p *EraProbe) probeFirst(ctx context.Context, m frame.Message) (sent bool, _ error, _ Era) {
	v := p.probe(ctx, m)
	if ctx.Err() != nil {
		return false, nil, EraSession // the message is abandoned anyway
	}
	modernHost := !isSessionInitialize(m)
	host := "the host speaks the session era"
	if modernHost {
		host = "the host speaks 2026-07-28"
	}
	switch {
	case v.undecided && modernHost:
		// Nothing said what the server speaks: the host's own era, for
		// this request; the next one asks again.
		p.log.Debug("era not decided: "+v.reason, "why", "the request goes to the server in the host's era")
		return false, nil, EraStateless
	case v.undecided:
		p.log.Debug("era not decided: "+v.reason, "why", "the host's initialize gets the failure")
		return true, v.err, EraSession
	case p.o.Choice == EraModern:
		version := v.version
		if v.era != EraStateless {
			p.log.Warn("the server did not answer server/discover as a 2026-07-28 server; speaking 2026-07-28 anyway (--era modern)", "reason", v.reason)
			version = ModernVersion
		}
		p.decide(EraStateless, "--era modern: "+host+", and "+v.reason, v.result, version)
	case v.era == EraStateless:
		why := host + ", and " + v.reason
		if !modernHost {
			why += ": bridging the host to " + v.version
		}
		p.decide(EraStateless, why, v.result, v.version)
	default:
		p.decide(EraSession, host+", and "+v.reason+": bridging the host to the session era", frame.Message{}, "")
	}
	return false, nil, p.o.Conn.Era()
}

// sendModern sends m down the 2026-07-28 chain, probing again and sending
// once more when the server refuses m's version (see EraProbe).
func (p *EraProbe) sendModern(ctx context.Context, m frame.Message) error {
	err := p.modern.Handle(ctx, m)
	if !isUnsupportedVersion(err) || ClassifyEra(m) != EraSession || ctx.Err() != nil {
		return err
	}
	_, before := p.o.Conn.Discovery()
	version, ok := p.reprobe(ctx)
	if !ok {
		return err
	}
	p.log.Info("server refused MCP "+before+"; sending again at "+version, "method", m.Method(), "id", m.ID().String())
	return p.modern.Handle(ctx, m)
}

// reprobe runs the probe again, one at a time (a message that finds one
// under way waits for it and takes its verdict), and returns the modern
// version it settled on.
func (p *EraProbe) reprobe(ctx context.Context) (string, bool) {
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
	v := p.probe(ctx, init)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = nil
	close(done)
	if v.undecided || v.era != EraStateless {
		p.log.Warn("server refused the version of a request, and answers server/discover as no 2026-07-28 server now", "reason", v.reason)
		return "", false
	}
	p.o.Conn.Discovered(v.result, v.version)
	return v.version, true
}

// probe sends server/discover and judges the answer (see EraProbe).
// trigger is the request that needs the era: a session-era initialize or
// a 2026-07-28 request lends the probe the client's capabilities and
// clientInfo.
func (p *EraProbe) probe(ctx context.Context, trigger frame.Message) discoverVerdict {
	v, _ := discoverRetrying(p.log, func(version string) (discoverVerdict, error) {
		resp, err := p.discover(ctx, trigger, version)
		return judgeDiscover(resp, err, p.o.Timeout), nil
	})
	return v
}

// discoverRetrying is the gateway's server/discover (the era probe's,
// serve's child handshake's): ask asks it at a version and judges the
// answer; it asks at [ModernVersion] and, when the answer is a -32022
// naming a version of ours ([mcp.DiscoverRetryVersion]), once more at
// that version. A second -32022 means 2026-07-28 without a
// DiscoverResult. An error from ask ends it.
func discoverRetrying(log *slog.Logger, ask func(version string) (discoverVerdict, error)) (discoverVerdict, error) {
	version := ModernVersion
	for attempt := 0; ; attempt++ {
		v, err := ask(version)
		if err != nil || v.retryAt == "" {
			return v, err
		}
		if attempt > 0 {
			return discoverVerdict{era: EraStateless, version: v.retryAt, reason: "server/discover answered error -32022 twice"}, nil
		}
		log.Debug("server/discover refused its version; asking again", "at", v.retryAt)
		version = v.retryAt
	}
}

// discover sends one server/discover at version, bounded by the timeout.
func (p *EraProbe) discover(ctx context.Context, trigger frame.Message, version string) (frame.Message, error) {
	var f clientFacts
	switch {
	case isSessionInitialize(trigger):
		f = clientFactsOf(p.o.Conn, trigger, p.o.ClientVersion)
	default:
		f = clientFactsOf(p.o.Conn, frame.Message{}, p.o.ClientVersion)
	}
	req := mcp.DiscoverRequest("0", metaObject(modernMetaEntries(f, version, "")))
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
	// undecided: the answer says nothing of the era (a network failure,
	// an authorization refusal, a try-later); err is the failure then.
	undecided bool
	err       error
	reason    string // what the server said, in a few words
}

// judgeDiscover judges the answer to a server/discover: resp is the
// message that answered it (when the transport delivered one), err why
// it was not delivered (a *frame.StatusError carrying the server's
// JSON-RPC error, a timeout, …); timeout is the probe's bound, for the
// reason. See EraProbe for the rules.
func judgeDiscover(resp frame.Message, err error, timeout time.Duration) discoverVerdict {
	session := func(why string) discoverVerdict { return discoverVerdict{era: EraSession, reason: why} }
	if err != nil {
		var st *frame.StatusError
		if !errors.As(err, &st) {
			if errors.Is(err, context.DeadlineExceeded) {
				return session(fmt.Sprintf("server/discover got no answer in %v", timeout))
			}
			return discoverVerdict{undecided: true, err: err, reason: "server/discover failed: " + err.Error()}
		}
		switch st.Code {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusRequestTimeout,
			http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return discoverVerdict{undecided: true, err: err, reason: fmt.Sprintf("server/discover answered HTTP %d", st.Code)}
		}
		m, perr := frame.Parse(st.Body)
		if perr != nil || m.Kind() != frame.Error {
			return session(fmt.Sprintf("server/discover answered HTTP %d", st.Code))
		}
		code, _ := m.ErrorCode()
		v := judgeError(m)
		switch {
		case code == frame.CodeMethodNotFound:
			v.reason = fmt.Sprintf("server/discover answered HTTP %d with error -32601 (the server does not know the method)", st.Code)
		case v.era == EraSession:
			v.reason = fmt.Sprintf("server/discover answered HTTP %d with error %d", st.Code, code)
		}
		return v
	}
	switch resp.Kind() {
	case frame.Result:
		for _, got := range resp.Get("result.supportedVersions").Array() {
			for _, ours := range modernVersions {
				if got.Type == gjson.String && got.Str == ours {
					return discoverVerdict{era: EraStateless, result: resp, version: ours, reason: "server/discover lists " + ours}
				}
			}
		}
		return session("server/discover lists no 2026-07-28 version")
	case frame.Error:
		v := judgeError(resp)
		code, _ := resp.ErrorCode()
		switch {
		case code == frame.CodeMethodNotFound:
			v.reason = "server/discover answered error -32601 (the server does not know the method)"
		case v.era == EraSession:
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
	case frame.CodeHeaderMismatch, frame.CodeMissingCapability:
		return discoverVerdict{era: EraStateless, version: ModernVersion, reason: fmt.Sprintf("server/discover answered error %d, which only 2026-07-28 has", code)}
	case frame.CodeUnsupportedVersion:
		if ours, ok := mcp.DiscoverRetryVersion(m, modernVersions); ok {
			return discoverVerdict{era: EraStateless, retryAt: ours, reason: "server/discover answered error -32022"}
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
	return ok && code == frame.CodeUnsupportedVersion
}
