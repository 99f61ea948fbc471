package mw

import (
	"context"
	"log/slog"
	"net/http"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// ModernLadderOptions configures [ValidateModern].
type ModernLadderOptions struct {
	// Versions are the protocol versions of the 2026-07-28 era served; a
	// request naming another gets -32022, whose data lists them. nil means
	// the revisions of the stateless era ([mcp.StatelessVersions]:
	// 2026-07-28 alone today).
	Versions []string
	// AcceptClaimlessResourceRead takes a claimless resources/read
	// ([IsClaimlessResourceRead]) as a 2026-07-28 request: the era fork
	// must then classify with [ClassifyEraClaimless]. Off, such a read never
	// reaches the stage (the fork sends it to the session era).
	AcceptClaimlessResourceRead bool
	// Logger receives a debug line per refusal; nil discards.
	Logger *slog.Logger
}

// ValidateModern returns the validation ladder of serve's 2026-07-28 face:
// the stage right behind the era fork's 2026-07-28 branch ([ByEra]), in
// front of the pool, so that no child is started or picked for a request
// it refuses (see the package documentation). Notifications, and anything
// else that is not a request, pass untouched: the ladder is for requests.
//
// A request passes only when every rung holds; the first that fails is the
// answer, a refusal at the HTTP level ([Refuse]) with the JSON-RPC error
// under the request's id. In order:
//
//  1. a subscriptions/listen whose answer is not an event stream
//     ([Exchange].EventStream) gets 406 with -32600;
//  2. an MCP-Protocol-Version, Mcp-Method or Mcp-Name header sent more
//     than once gets 400 with -32020;
//  3. params._meta missing or not an object, or lacking
//     io.modelcontextprotocol/protocolVersion, or whose
//     io.modelcontextprotocol/clientCapabilities is missing or not an
//     object, gets 400 with -32602;
//  4. with 400 and -32020: the MCP-Protocol-Version header missing or
//     other than the _meta version; then Mcp-Method missing or other than
//     the method; then, for tools/call and prompts/get, Mcp-Name missing or
//     other than params.name, and for resources/read other than
//     params.uri, once decoded ([frame.DecodeHeaderValue]: a value that is
//     not valid =?base64?…?= is a mismatch too). A body without a string
//     name (or uri) must come without Mcp-Name;
//  5. a _meta version that is not a string gets 400 with -32602, and one
//     that Versions does not list 400 with -32022, whose data is
//     {"supported":Versions,"requested":the version};
//  6. a method that is not a 2026-07-28 client request (server/discover,
//     completion/complete, prompts/list, prompts/get, resources/list,
//     resources/read, resources/templates/list, subscriptions/listen,
//     tools/list, tools/call) gets 404 with -32601.
//
// The body is read as the child's JSON decoder reads it: where an object
// repeats a key, the last one counts. Headers are matched by name in any
// case, as HTTP has it.
//
// With AcceptClaimlessResourceRead, a claimless resources/read skips the
// ladder but for the routing headers it does send: a repeated one, or an
// Mcp-Method or Mcp-Name that does not match the body, is refused as in
// rungs 2 and 4. It then passes with the version claim filled in:
// params._meta gets io.modelcontextprotocol/protocolVersion (the first of
// Versions) and, unless it has them, an empty clientCapabilities; the
// MCP-Protocol-Version header is set to match. A read whose params or
// _meta is not an object gets 400 with -32602.
//
// A message whose context carries no [Exchange] (outside serve) skips
// rung 1. What passes is passed on unchanged, but for a claimless read.
func ValidateModern(o ModernLadderOptions) Middleware {
	versions := slices.Clone(o.Versions)
	if len(versions) == 0 {
		versions = mcp.StatelessVersions()
	}
	l := &ladder{versions: versions, claimless: o.AcceptClaimlessResourceRead, log: loggerOrDiscard(o.Logger)}
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if m.Kind() != frame.Request {
				return next.Handle(ctx, m)
			}
			if l.claimless && IsClaimlessResourceRead(m) {
				out, err := l.claim(m)
				if err != nil {
					l.refused(m, err)
					return err
				}
				return next.Handle(ctx, out)
			}
			if err := l.check(ctx, m); err != nil {
				l.refused(m, err)
				return err
			}
			return next.Handle(ctx, m)
		})
	})
}

// ladder is the state of one [ValidateModern] stage.
type ladder struct {
	versions  []string
	claimless bool
	log       *slog.Logger
}

func (l *ladder) refused(m frame.Message, err error) {
	l.log.Debug("a 2026-07-28 request is refused", "method", m.Method(), "id", m.ID().String(), "refusal", refusalText(err))
}

// refusalText returns the body of a refusal, for a log line.
func refusalText(err error) string {
	if st, ok := err.(*frame.StatusError); ok {
		return string(st.Body)
	}
	return err.Error()
}

// check runs the rungs on a 2026-07-28 request; nil when it passes.
func (l *ladder) check(ctx context.Context, m frame.Message) error {
	id := m.ID()
	if m.Method() == "subscriptions/listen" {
		if x := ExchangeOf(ctx); x != nil && !x.EventStream() {
			return Refuse(http.StatusNotAcceptable, id, frame.CodeInvalidRequest, "Not Acceptable: subscriptions/listen is answered with an event stream; Accept must include text/event-stream")
		}
	}
	if err := repeatedRoutingHeader(m); err != nil {
		return err
	}
	meta := m.Get("params._meta") // names are unique there (see uniqueMember)
	version, caps := mcp.Claims(meta)
	switch {
	case !meta.IsObject():
		return Refuse(http.StatusBadRequest, id, frame.CodeInvalidParams, "Invalid params: params._meta is required on a 2026-07-28 request")
	case !version.Exists():
		return Refuse(http.StatusBadRequest, id, frame.CodeInvalidParams, "Invalid params: params._meta lacks "+MetaProtocolVersion)
	case !caps.IsObject():
		return Refuse(http.StatusBadRequest, id, frame.CodeInvalidParams, "Invalid params: params._meta lacks "+MetaClientCapabilities+" (an object)")
	}
	h := m.Header()
	claimed := version.Raw
	if version.Type == gjson.String {
		claimed = version.Str
	}
	if vs := h[frame.HeaderProtocolVersion]; len(vs) == 0 {
		return mismatch(id, "the MCP-Protocol-Version header is missing")
	} else if vs[0] != claimed {
		return mismatch(id, "the MCP-Protocol-Version header does not match params._meta's protocolVersion")
	}
	if err := routingMismatch(m, false); err != nil {
		return err
	}
	if version.Type != gjson.String {
		return Refuse(http.StatusBadRequest, id, frame.CodeInvalidParams, "Invalid params: "+MetaProtocolVersion+" must be a string")
	}
	if !slices.Contains(l.versions, version.Str) {
		return RefuseWithData(http.StatusBadRequest, id, frame.CodeUnsupportedVersion,
			"Unsupported protocol version "+quoteShort(version.Str), versionData(l.versions, version.Str))
	}
	if !mcp.IsStatelessClientRequest(m.Method()) {
		return Refuse(http.StatusNotFound, id, frame.CodeMethodNotFound, "Method not found: "+quoteShort(m.Method()))
	}
	return nil
}

// claim checks the routing headers a claimless read sends and returns it
// with the version claim filled in.
func (l *ladder) claim(m frame.Message) (frame.Message, error) {
	if err := repeatedRoutingHeader(m); err != nil {
		return m, err
	}
	if err := routingMismatch(m, true); err != nil {
		return m, err
	}
	out, err := withModernMeta(m, clientFacts{}, l.versions[0], "")
	if err != nil {
		return m, Refuse(http.StatusBadRequest, m.ID(), frame.CodeInvalidParams, "Invalid params: "+err.Error())
	}
	h := m.Header().Clone()
	if h == nil {
		h = make(http.Header, 1)
	}
	h.Set(frame.HeaderProtocolVersion, l.versions[0])
	return out.WithHeaders(h), nil
}

// routingHeaders are the headers a 2026-07-28 request may send once only.
// They, and the other header names the ladder reads, are canonical (as
// the side channel's keys are: net/http's), so the ladder indexes the
// header map with them, without h.Values's canonicalization of the name
// on every read.
var routingHeaders = []string{frame.HeaderProtocolVersion, frame.HeaderMethod, frame.HeaderName}

// repeatedRoutingHeader refuses m when it sends a routing header twice.
func repeatedRoutingHeader(m frame.Message) error {
	h := m.Header()
	for _, k := range routingHeaders {
		if len(h[k]) > 1 {
			return mismatch(m.ID(), "the "+k+" header is sent more than once")
		}
	}
	return nil
}

// routingMismatch refuses m when its Mcp-Method or Mcp-Name header does
// not say what its body does. With onlySent, a header m does not send is
// no mismatch.
func routingMismatch(m frame.Message, onlySent bool) error {
	h, id := m.Header(), m.ID()
	if vs := h[frame.HeaderMethod]; len(vs) == 0 {
		if !onlySent {
			return mismatch(id, "the Mcp-Method header is missing")
		}
	} else if vs[0] != m.Method() {
		return mismatch(id, "the Mcp-Method header does not match the method")
	}
	key := mcp.NameMember(m.Method())
	if key == "" {
		return nil
	}
	body := uniqueMember(messageParams(m), key)
	vs := h[frame.HeaderName]
	switch {
	case len(vs) == 0 && body.Type == gjson.String && !onlySent:
		return mismatch(id, "the Mcp-Name header is missing")
	case len(vs) == 0:
		return nil
	case body.Type != gjson.String:
		return mismatch(id, "an Mcp-Name header is sent but params."+key+" is not a string")
	}
	got, err := frame.DecodeHeaderValue(vs[0])
	if err != nil {
		return mismatch(id, "the Mcp-Name header is not valid =?base64?…?=")
	}
	if got != body.Str {
		return mismatch(id, "the Mcp-Name header does not match params."+key)
	}
	return nil
}

// mismatch returns the -32020 refusal of request id.
func mismatch(id frame.ID, why string) error {
	return Refuse(http.StatusBadRequest, id, frame.CodeHeaderMismatch, "Header mismatch: "+why)
}

// versionData returns the data of a -32022 error.
func versionData(supported []string, requested string) []byte {
	b := []byte(`{"supported":[`)
	for i, v := range supported {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, jsonString(v)...)
	}
	b = append(b, `],"requested":`...)
	b = append(b, jsonString(requested)...)
	return append(b, '}')
}

// messageParams returns m's params member (names are unique at the top
// level: see uniqueMember).
func messageParams(m frame.Message) gjson.Result { return m.Params() }
