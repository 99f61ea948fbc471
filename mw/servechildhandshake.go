package mw

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Child handshake defaults.
const (
	// DefaultChildDiscoverTimeout bounds the server/discover that finds
	// which kind a pooled child is.
	DefaultChildDiscoverTimeout = 5 * time.Second
	// DefaultChildInitializeTimeout bounds a pooled child's initialize.
	DefaultChildInitializeTimeout = 30 * time.Second
)

// ErrChildDied means a child ended during its handshake's server/discover:
// start it again and hand it over with SkipDiscover, as a child of the
// session era.
var ErrChildDied = errors.New("the server process exited during server/discover")

// ChildHandshakeOptions configures [ChildHandshake.Run].
type ChildHandshakeOptions struct {
	// DiscoverTimeout bounds server/discover; 0 means
	// DefaultChildDiscoverTimeout. InitializeTimeout bounds initialize; 0
	// means DefaultChildInitializeTimeout.
	DiscoverTimeout   time.Duration
	InitializeTimeout time.Duration
	// SkipDiscover takes the child for one of the session era at once.
	SkipDiscover bool
	// ClientName and ClientVersion are the gateway's clientInfo; ""
	// means "mcp-stdio" and "0".
	ClientName, ClientVersion string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ChildHandshake is the gateway's own handshake with a child that serves
// 2026-07-28 clients, which bring no handshake of their own (serve's
// pooled children; see the package documentation). It asks server/discover first, judged as a dual-era
// client judges it on stdio (a DiscoverResult listing 2026-07-28, or an
// error only a 2026-07-28 server sends, means a dual-era child; anything
// else, a timeout included, a child of the session era). A dual-era child
// is never sent initialize (an era once chosen on a stdio connection is
// kept by some servers); a child of the session era gets initialize, with
// the client capabilities sampling, elicitation and roots — the stages in
// front bridge them to the clients that declare them, request by request
// — then notifications/initialized.
//
// The outcome goes to the child's Conn: a dual-era child's Conn has era
// 2026-07-28 and its DiscoverResult ([Conn.Discovery]); a session-era
// child's, the session era and the initialize and its result
// ([Conn.ServerInitialize]).
type ChildHandshake struct {
	conn  *Conn
	calls *Remap
	d     Duplex
}

// NewChildHandshake returns the handshake with the child behind child
// (its server-bound handler) whose state is conn. Until Run returns, the
// child's messages must be handed to [ChildHandshake.FromChild].
func NewChildHandshake(conn *Conn, child Handler) *ChildHandshake {
	h := &ChildHandshake{conn: conn, calls: NewRemap("handshake")}
	capture := HandlerFunc(func(_ context.Context, m frame.Message) error {
		h.calls.Capture(m) // anything else the child says before it is ready is dropped
		return nil
	})
	h.d = AwaitAnswers(conn)(Duplex{ToServer: child, ToClient: capture})
	return h
}

// FromChild returns the handler the child's messages go to during Run.
func (h *ChildHandshake) FromChild() Handler { return h.d.ToClient }

// Run performs the handshake. It fails with ErrChildDied when the child
// ended during server/discover, and with an error naming the child's
// answer when initialize failed.
func (h *ChildHandshake) Run(ctx context.Context, o ChildHandshakeOptions) error {
	if o.DiscoverTimeout <= 0 {
		o.DiscoverTimeout = DefaultChildDiscoverTimeout
	}
	if o.InitializeTimeout <= 0 {
		o.InitializeTimeout = DefaultChildInitializeTimeout
	}
	if o.ClientName == "" {
		o.ClientName = "mcp-stdio"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "0"
	}
	log := loggerOrDiscard(o.Logger)
	if !o.SkipDiscover {
		v, err := h.discover(ctx, o.DiscoverTimeout, log)
		if err != nil {
			return err
		}
		if v.era == EraStateless {
			h.conn.Discovered(v.result, v.version)
			h.conn.SetEra(EraStateless)
			log.Debug("the server speaks 2026-07-28", "reason", v.reason)
			return nil
		}
		log.Debug("the server speaks the session era only", "reason", v.reason)
	}
	return h.initialize(ctx, o)
}

// discover asks server/discover, once more at the version a -32022 names
// ([discoverRetrying]).
func (h *ChildHandshake) discover(ctx context.Context, timeout time.Duration, log *slog.Logger) (discoverVerdict, error) {
	return discoverRetrying(log, func(version string) (discoverVerdict, error) {
		req := mcp.DiscoverRequest("0", metaObject(modernMetaEntries(clientFacts{}, version, "")))
		pctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := h.calls.Call(pctx, h.d.ToServer, req, "")
		cancel()
		if errors.Is(err, frame.ErrUnavailable) {
			return discoverVerdict{}, ErrChildDied
		}
		if err != nil && ctx.Err() != nil {
			return discoverVerdict{}, ctx.Err()
		}
		return judgeDiscover(resp, err, timeout), nil
	})
}

// initialize performs the session era's handshake ([Initialize]).
func (h *ChildHandshake) initialize(ctx context.Context, o ChildHandshakeOptions) error {
	ictx, cancel := context.WithTimeout(WithConn(ctx, h.conn), o.InitializeTimeout)
	defer cancel()
	_, err := Initialize(ictx, h.d.ToServer, h.calls, HandshakeOptions{
		ClientName:    o.ClientName,
		ClientVersion: o.ClientVersion,
		Roots:         true,
		Logger:        o.Logger,
	})
	if err != nil {
		return err
	}
	h.conn.SetEra(EraSession)
	return nil
}
