package mw

import (
	"context"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Era is the protocol era a connection speaks.
type Era uint8

const (
	// EraUnknown means the era is not known yet.
	EraUnknown Era = iota
	// EraSession is the session era: MCP 2025-03-26 to 2025-11-25 over
	// Streamable HTTP, and 2024-11-05 over HTTP+SSE. A client opens a
	// session with initialize; the server may send requests of its own.
	EraSession
	// EraStateless is MCP 2026-07-28: no handshake and no session, _meta
	// on every request.
	EraStateless
)

// String returns "session era", the date of the revision that began the
// stateless era ([mcp.Version20260728]) or "unknown".
func (e Era) String() string {
	switch e {
	case EraSession:
		return "session era"
	case EraStateless:
		return mcp.Version20260728
	}
	return "unknown"
}

// Conn is what the stages of one connection know about it: the era it
// speaks, the protocol version in use, the client's initialize and the
// server's answer to it, and who the client is. A connection is the relay
// process as a whole (one client, one server) or one session of serve.
//
// The pipeline creates the Conn and puts it in the context of every
// message it hands its chain ([WithConn]), so any stage can read it with
// [ConnOf]; the stages that learn its facts (the session stages) are given
// it when they are built. A Conn is safe for concurrent use.
type Conn struct {
	mu         sync.Mutex
	era        Era
	version    string
	clientInit frame.Message
	serverInit frame.Message
	principal  string
	// 2026-07-28: the server's DiscoverResult (a result message), the
	// modern version in use, and the log level a session-era client asked
	// for.
	discovered    frame.Message
	modernVersion string
	logLevel      string
	// Why the era is what it is (see SetEraBy), and what a 2026-07-28
	// client said of itself in its requests' _meta (see NoteClientMeta).
	eraReason      string
	clientInfoMeta []byte
	clientCapsMeta []byte
	closed         error // why the connection ended; nil while it lasts
	onClose        []func(cause error)
}

// NewConn returns the state of a connection in era e.
func NewConn(e Era) *Conn { return &Conn{era: e} }

// Era returns the era the connection speaks.
func (c *Conn) Era() Era {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era
}

// SetEra records the era the connection speaks.
func (c *Conn) SetEra(e Era) {
	c.mu.Lock()
	c.era = e
	c.mu.Unlock()
}

// SetEraBy records the era the connection speaks and, in a few words,
// why: what each side said that decided it (see [Conn.EraReason]).
func (c *Conn) SetEraBy(e Era, why string) {
	c.mu.Lock()
	c.era, c.eraReason = e, why
	c.mu.Unlock()
}

// EraReason returns why the connection speaks its era, as [Conn.SetEraBy]
// recorded it; "" when nothing decided it.
func (c *Conn) EraReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eraReason
}

// NoteClientMeta records what a 2026-07-28 client's request m says of
// the client in params._meta: its io.modelcontextprotocol/clientInfo and
// clientCapabilities, each when it is an object (the last one seen
// stays). The gateway's own requests on the client's behalf carry them
// ([Conn.ClientMeta]).
func (c *Conn) NoteClientMeta(m frame.Message) {
	meta := m.Get("params._meta")
	if !meta.IsObject() {
		return
	}
	info := meta.Get(clientInfoKey)
	caps := meta.Get(clientCapabilitiesKey)
	if !info.IsObject() && !caps.IsObject() {
		return
	}
	c.mu.Lock()
	if info.IsObject() {
		c.clientInfoMeta = []byte(info.Raw)
	}
	if caps.IsObject() {
		c.clientCapsMeta = []byte(caps.Raw)
	}
	c.mu.Unlock()
}

// ClientMeta returns what [Conn.NoteClientMeta] recorded: the raw
// clientInfo and clientCapabilities objects of a 2026-07-28 client, each
// nil when none was seen. They are shared: never modify them.
func (c *Conn) ClientMeta() (clientInfo, capabilities []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientInfoMeta, c.clientCapsMeta
}

// ProtocolVersion returns the protocol version in use: the one the
// server's initialize result named, "" before it answered.
func (c *Conn) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Initialized records a completed handshake: the client's initialize
// request, byte for byte as it was sent, and the server's result message.
// The protocol version becomes the result's protocolVersion.
func (c *Conn) Initialized(request, result frame.Message) {
	version := result.Get("result.protocolVersion").String()
	c.mu.Lock()
	c.clientInit, c.serverInit, c.version = request, result, version
	c.mu.Unlock()
}

// ClientInitialize returns the client's initialize request of the last
// completed handshake (its clientInfo, capabilities, …), and whether there
// was one.
func (c *Conn) ClientInitialize() (frame.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientInit, c.clientInit.Len() > 0
}

// ServerInitialize returns the server's answer to that initialize (a
// result message: serverInfo, capabilities, protocolVersion, …), and
// whether there was one.
func (c *Conn) ServerInitialize() (frame.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverInit, c.serverInit.Len() > 0
}

// Discovered records what the era probe learned of a 2026-07-28 server:
// its answer to server/discover (a result message; the zero Message when
// the server named its era without one, by a modern error) and the modern
// protocol version the relay speaks with it.
func (c *Conn) Discovered(result frame.Message, version string) {
	c.mu.Lock()
	c.discovered, c.modernVersion = result, version
	c.mu.Unlock()
}

// Discovery returns what [Conn.Discovered] recorded: the DiscoverResult
// message (the zero Message when there was none) and the modern protocol
// version ("" before the probe found a 2026-07-28 server).
func (c *Conn) Discovery() (result frame.Message, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.discovered, c.modernVersion
}

// SetLogLevel records the log level a session-era client asked for with
// logging/setLevel, which a 2026-07-28 server takes on every request
// instead.
func (c *Conn) SetLogLevel(level string) {
	c.mu.Lock()
	c.logLevel = level
	c.mu.Unlock()
}

// LogLevel returns the level [Conn.SetLogLevel] recorded, "" for none.
func (c *Conn) LogLevel() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logLevel
}

// Principal returns who the client is, as the authentication in front
// established it ("" when nothing did).
func (c *Conn) Principal() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.principal
}

// SetPrincipal records who the client is.
func (c *Conn) SetPrincipal(p string) {
	c.mu.Lock()
	c.principal = p
	c.mu.Unlock()
}

// OnClose has f run when the connection ends ([Conn.Close]), with the
// cause; at once if it has ended already. A stage that keeps something per
// connection (answers waiting, streams) lets it go there.
func (c *Conn) OnClose(f func(cause error)) {
	c.mu.Lock()
	if c.closed == nil {
		c.onClose = append(c.onClose, f)
		c.mu.Unlock()
		return
	}
	cause := c.closed
	c.mu.Unlock()
	f(cause)
}

// Close ends the connection with cause (which must not be nil) and runs
// the OnClose functions, in the order they were registered, before it
// returns. Later calls do nothing.
func (c *Conn) Close(cause error) {
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return
	}
	c.closed = cause
	fs := c.onClose
	c.onClose = nil
	c.mu.Unlock()
	for _, f := range fs {
		f(cause)
	}
}

// Err returns why the connection ended, nil while it lasts.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// clientInfoKey and clientCapabilitiesKey are the gjson paths of those
// _meta keys inside a _meta object (gjson.Escape of the key, spelled out).
const (
	clientInfoKey         = `io\.modelcontextprotocol\/clientInfo`
	clientCapabilitiesKey = `io\.modelcontextprotocol\/clientCapabilities`
)

type connKey struct{}

// WithConn returns ctx carrying c.
func WithConn(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnOf returns the Conn ctx carries, or nil.
func ConnOf(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p, who the client of the request is as
// the authentication in front established it (an issuer and subject, a
// token's name; "" for nobody in particular). Serve's 2026-07-28 pool keys
// its children on it.
func WithPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the principal ctx carries, "" when none.
func PrincipalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
