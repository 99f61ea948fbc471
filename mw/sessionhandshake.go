package mw

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// HandshakeOptions configures the gateway's own session-era handshake
// ([Initialize], [InitializeWith], [HandshakeForModern]).
type HandshakeOptions struct {
	// ProtocolVersion is the version the initialize asks for; "" means
	// 2025-11-25. Whatever version the server answers is taken.
	ProtocolVersion string
	// ClientName and ClientVersion are the initialize's clientInfo; ""
	// means "mcp-stdio" and "unknown".
	ClientName    string
	ClientVersion string
	// Roots adds the roots capability to the client capabilities
	// [Initialize] declares (sampling and elicitation always are, so that
	// the server may ask for them: the gateway puts its requests to the
	// 2026-07-28 clients). [HandshakeForModern] declares what the host
	// declares instead.
	Roots bool
	// NoCapabilities makes [Initialize] and [InitializeWith] declare no
	// client capabilities at all ({}), Roots notwithstanding: for a
	// client that can honour none of the server's requests (the
	// connectivity check).
	NoCapabilities bool
	// Logger receives the handshake's outcome; nil discards.
	Logger *slog.Logger
}

// handshakeCapabilities returns the client capabilities the gateway's
// initialize declares.
func (o HandshakeOptions) handshakeCapabilities() []byte {
	if o.NoCapabilities {
		return []byte(`{}`)
	}
	if o.Roots {
		return []byte(`{"sampling":{},"elicitation":{},"roots":{}}`)
	}
	return []byte(`{"sampling":{},"elicitation":{}}`)
}

// initializeRequest returns the gateway's initialize request, declaring
// caps and, when info is not nil, that clientInfo object (else the one o
// names), under id 0 (a Remap mints its real id).
func (o HandshakeOptions) initializeRequest(caps, info []byte) frame.Message {
	version, name, clientVersion := o.ProtocolVersion, o.ClientName, o.ClientVersion
	if version == "" {
		version = mcp.LatestSessionEraVersion
	}
	if name == "" {
		name = "mcp-stdio"
	}
	if clientVersion == "" {
		clientVersion = "unknown"
	}
	if info == nil {
		info = mcp.Implementation(name, clientVersion)
	}
	return mcp.InitializeRequest("0", version, caps, info)
}

// Initialize performs the gateway's own session-era handshake with a
// server on behalf of 2026-07-28 clients, which make none: it sends
// initialize (the version, clientInfo and capabilities o names) to next
// under an id calls mints, waits for the answer — which calls.Capture
// must take on next's client-bound side, from any goroutine — until ctx
// ends, sends notifications/initialized, and records the handshake in
// the connection ctx carries ([ConnOf], [Conn.Initialized]; the request
// as it was sent). It returns the server's initialize result message.
//
// next may answer before its Handle returns (the relay's chain) or later
// (a child process). An error response to initialize fails the handshake
// with an error quoting it; nothing is recorded then and no
// notifications/initialized is sent.
//
// Serve's pool calls it when it starts a child that speaks only the
// session era, with Roots set; the relay calls it through
// [HandshakeForModern], and its connectivity check through
// [InitializeWith].
func Initialize(ctx context.Context, next Handler, calls *Remap, o HandshakeOptions) (frame.Message, error) {
	return initialize(ctx, next, remapCaller(next, calls, true), o, o.handshakeCapabilities(), nil)
}

// Caller sends request req and returns the answer to it, or fails. It may
// send req under an id of its own ([Remap.Call] mints one); the answer it
// returns answers req.
type Caller func(ctx context.Context, req frame.Message) (frame.Message, error)

// InitializeWith is [Initialize] for a request call sends and answers:
// for a client at a chain's client end, where the ids a [Remap] mints are
// refused ([ReservedIDs]) and the answer comes back as a host's does. The
// initialize goes to call under id 0; notifications/initialized goes to
// next. A failure of call is returned wrapped; an error response, as an
// [*InitializeRefusedError].
func InitializeWith(ctx context.Context, next Handler, call Caller, o HandshakeOptions) (frame.Message, error) {
	return initialize(ctx, next, call, o, o.handshakeCapabilities(), nil)
}

// InitializeRefusedError is the error the gateway's handshake fails with
// when the server answers its initialize with an error.
type InitializeRefusedError struct {
	// Answer is the server's error response.
	Answer frame.Message
}

func (e *InitializeRefusedError) Error() string {
	code, _ := e.Answer.ErrorCode()
	return fmt.Sprintf("the server refused the gateway's initialize: %d %s", code, e.Answer.Get("error.message").String())
}

// remapCaller returns the Caller that sends through calls to next, waiting
// for an answer that comes after next's Handle returned when wait is set.
func remapCaller(next Handler, calls *Remap, wait bool) Caller {
	return func(ctx context.Context, req frame.Message) (frame.Message, error) {
		if wait {
			return calls.CallAndWait(ctx, next, req, "")
		}
		return calls.Call(ctx, next, req, "")
	}
}

// initialize is Initialize declaring caps and the clientInfo info (nil:
// the one o names), the request sent and answered by call.
func initialize(ctx context.Context, next Handler, call Caller, o HandshakeOptions, caps, info []byte) (frame.Message, error) {
	req := o.initializeRequest(caps, info)
	resp, err := call(ctx, req)
	if err != nil {
		return frame.Message{}, fmt.Errorf("the gateway's initialize: %w", err)
	}
	if resp.Kind() != frame.Result {
		return frame.Message{}, &InitializeRefusedError{Answer: resp}
	}
	if sent, err := req.WithID(resp.ID()); err == nil {
		req = sent
	}
	// notifications/initialized goes before the handshake is recorded: a
	// request that finds it recorded goes on at once, and must not reach
	// the server before it.
	if err := next.Handle(ctx, mcp.InitializedNotification()); err != nil {
		return frame.Message{}, fmt.Errorf("the gateway's notifications/initialized: %w", err)
	}
	if c := ConnOf(ctx); c != nil {
		c.Initialized(req, resp)
	}
	loggerOrDiscard(o.Logger).Info("initialized the server for 2026-07-28 clients",
		"version", resp.Get("result.protocolVersion").String(), "server", resp.Get("result.serverInfo.name").String())
	return resp, nil
}

// HandshakeForModern returns the relay's era bridge that makes the
// session-era handshake with the server on behalf of a 2026-07-28 host,
// which sends server/discover and no initialize: it sits in the relay's
// session-era chain, outside [LocalDiscover], which answers the host's
// server/discover from the handshake's result (see the package
// documentation).
//
// The first server-bound request of a 2026-07-28 client ([ClassifyEra])
// while the connection ([ConnOf]) has no initialize result (the host made
// no handshake of its own) waits while the stage calls [Initialize]
// through the chain inside it, under ids "mcp-stdio/handshake/<n>" (the
// answers stop here), and is then sent on. Requests that come meanwhile
// wait for the same handshake. The initialize declares, of the
// capabilities the request's io.modelcontextprotocol/clientCapabilities
// names, sampling, elicitation and roots (their shapes are the same in
// both eras): the server asks the host only for what it can do. Its
// clientInfo is the request's io.modelcontextprotocol/clientInfo, the
// host's, when that is an object; else the gateway's own (ClientName,
// ClientVersion). A failed
// handshake fails the request (its Handle returns the error), and the
// next request tries again. Everything else passes, both ways.
func HandshakeForModern(o HandshakeOptions) Middleware {
	return func(next Duplex) Duplex {
		h := &lazyHandshake{o: o, next: next, calls: NewRemap("handshake")}
		return Duplex{
			ToServer: HandlerFunc(h.toServer),
			ToClient: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if h.calls.Capture(m) {
					return nil
				}
				return next.ToClient.Handle(ctx, m)
			}),
		}
	}
}

type lazyHandshake struct {
	o     HandshakeOptions
	next  Duplex
	calls *Remap

	mu      sync.Mutex
	running chan struct{} // closed when the handshake under way ends; nil when none
}

func (h *lazyHandshake) toServer(ctx context.Context, m frame.Message) error {
	c := ConnOf(ctx)
	if c == nil || m.Kind() != frame.Request || ClassifyEra(m) != EraStateless {
		return h.next.ToServer.Handle(ctx, m)
	}
	if err := h.ensure(ctx, c, m); err != nil {
		return err
	}
	return h.next.ToServer.Handle(ctx, m)
}

// ensure returns once c has an initialize result, making the handshake
// (declaring what trigger's client declares) unless one is under way.
func (h *lazyHandshake) ensure(ctx context.Context, c *Conn, trigger frame.Message) error {
	for {
		if _, ok := c.ServerInitialize(); ok {
			return nil
		}
		h.mu.Lock()
		if wait := h.running; wait != nil {
			h.mu.Unlock()
			select {
			case <-wait:
				continue // made, or failed: then this request tries
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		h.running = done
		h.mu.Unlock()
		_, err := initialize(ctx, h.next.ToServer, remapCaller(h.next.ToServer, h.calls, false), h.o, declaredCapabilities(trigger), declaredClientInfo(trigger))
		h.mu.Lock()
		h.running = nil
		close(done)
		h.mu.Unlock()
		if err != nil {
			loggerOrDiscard(h.o.Logger).Warn("could not initialize the server for a 2026-07-28 host", "err", err)
		}
		return err
	}
}

// declaredClientInfo returns the clientInfo object 2026-07-28 request m
// declares, nil when it declares none.
func declaredClientInfo(m frame.Message) []byte {
	if info := m.Get(mcp.ParamsClientInfo); info.IsObject() {
		return []byte(info.Raw)
	}
	return nil
}

// declaredCapabilities returns, as session-era client capabilities, the
// sampling, elicitation and roots members of the client capabilities
// 2026-07-28 request m declares, in their order; {} for none.
func declaredCapabilities(m frame.Message) []byte {
	var entries []metaEntry
	m.Get(mcp.ParamsClientCapabilities).ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "sampling", "elicitation", "roots":
			if value.IsObject() {
				entries = append(entries, metaEntry{key.Str, []byte(value.Raw)})
			}
		}
		return true
	})
	return metaObject(entries)
}
