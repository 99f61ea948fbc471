package exampleserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Protocol versions.
const (
	statelessVersion     = "2026-07-28"
	latestSessionVersion = "2025-11-25"
)

// sessionEraVersions are the session-era versions served (the ones
// initialize negotiates), newest first.
var sessionEraVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Reserved _meta keys of MCP 2026-07-28, from the protocol's vocabulary.
const (
	metaProtocolVersion    = mcp.MetaProtocolVersion
	metaClientCapabilities = mcp.MetaClientCapabilities
	metaLogLevel           = mcp.MetaLogLevel
	metaServerInfo         = mcp.MetaServerInfo
	metaSubscriptionID     = mcp.MetaSubscriptionID
)

// pathLogLevel returns the gjson path, from a request's params, of the
// reserved _meta key of its log level: the vocabulary's path from the
// message (mcp.ParamsLogLevel) without its "params.", so that reading it
// builds no string.
func pathLogLevel() string { return strings.TrimPrefix(mcp.ParamsLogLevel, "params.") }

// era is the generation of the protocol a connection or request speaks.
type era uint8

const (
	eraUnset     era = iota // no era-bearing message yet
	eraSession              // the session era: initialize handshake (2024-11-05 … 2025-11-25)
	eraStateless            // 2026-07-28: no handshake, per-request _meta
)

// object is a JSON object the server builds. encoding/json writes its keys
// sorted, so the server's output is deterministic.
type object = map[string]any

// request is one client request as a handler sees it.
type request struct {
	id        frame.ID
	method    string
	params    gjson.Result // the request's params (points into its bytes)
	stateless bool         // answered under 2026-07-28 rules
	// stamped: the result's "_meta" and resultType are the server's
	// stamps, written around the handler's members by marshalStamped.
	stamped bool
	// caps are the client capabilities in force: the request's own on a
	// 2026-07-28 request, initialize's on a session-era one.
	caps gjson.Result
	// release gives the handler slot back early, for a handler about to
	// wait on the client. Idempotent.
	release func()
}

// rpcError is a JSON-RPC error a handler answers with.
type rpcError struct {
	code    int
	message string
	data    any // marshalled as error.data when non-nil
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.code, e.message) }

func (e *rpcError) response(id frame.ID) frame.Message {
	var data []byte
	if e.data != nil {
		data = marshal(e.data)
	}
	return frame.ErrorResponseData(id, e.code, e.message, data)
}

// invalidParams is the -32602 error.
func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{code: frame.CodeInvalidParams, message: "invalid params: " + fmt.Sprintf(format, args...)}
}

// unsupportedVersion is MCP 2026-07-28's UnsupportedProtocolVersionError.
func unsupportedVersion(requested string, supported []string) *rpcError {
	return &rpcError{
		code:    frame.CodeUnsupportedVersion,
		message: fmt.Sprintf("unsupported protocol version %q", requested),
		data:    object{"supported": supported, "requested": requested},
	}
}

// cacheHint is the caching advice on a cacheable 2026-07-28 result.
type cacheHint struct {
	ttlMs int64
	scope string // "public" or "private"
}

var (
	// noCache: the result can change at any time (the tool list, the
	// counter).
	noCache = cacheHint{0, "private"}
	// staticCache: the result never changes while the server runs.
	staticCache = cacheHint{60_000, "public"}
)

// method describes one JSON-RPC method of the server.
type method struct {
	handle func(s *server, ctx context.Context, req *request) (object, error)
	// session and stateless tell the eras that have the method: the
	// session era and 2026-07-28.
	session, stateless bool
	// cache, when set, marks results that carry ttlMs and cacheScope on
	// 2026-07-28.
	cache func(s *server, req *request) cacheHint
}

func staticHint(*server, *request) cacheHint  { return staticCache }
func noCacheHint(*server, *request) cacheHint { return noCache }

// lookupMethod is the server's dispatch table (ping is answered by the read
// loop). It is a switch rather than a map: every mcp-stdio process links
// this package (to run it as a child), and a package-level map would be
// built, its code paged in, by each of them at start, serve included.
func lookupMethod(name string) (method, bool) {
	switch name {
	case "initialize":
		return method{handle: (*server).initialize, session: true}, true
	case "logging/setLevel":
		return method{handle: (*server).setLevel, session: true}, true
	case "resources/subscribe":
		return method{handle: (*server).subscribe, session: true}, true
	case "resources/unsubscribe":
		return method{handle: (*server).unsubscribe, session: true}, true
	case "server/discover":
		return method{handle: (*server).discover, stateless: true, cache: staticHint}, true
	case "subscriptions/listen":
		return method{handle: (*server).listen, stateless: true}, true
	case "tools/list":
		return method{handle: (*server).listTools, session: true, stateless: true, cache: noCacheHint}, true
	case "tools/call":
		return method{handle: (*server).callTool, session: true, stateless: true}, true
	case "resources/list":
		return method{handle: (*server).listResources, session: true, stateless: true, cache: staticHint}, true
	case "resources/templates/list":
		return method{handle: (*server).listTemplates, session: true, stateless: true, cache: staticHint}, true
	case "resources/read":
		return method{handle: (*server).readResource, session: true, stateless: true, cache: (*server).readHint}, true
	case "prompts/list":
		return method{handle: (*server).listPrompts, session: true, stateless: true, cache: staticHint}, true
	case "prompts/get":
		return method{handle: (*server).getPrompt, session: true, stateless: true}, true
	case "completion/complete":
		return method{handle: (*server).complete, session: true, stateless: true}, true
	}
	return method{}, false
}

// classify decides the era a request is answered in, locking the
// connection's era on its first era-bearing request (see the package
// documentation). It runs on the read loop, in arrival order.
func (s *server) classify(m frame.Message) (*request, *rpcError) {
	req := &request{id: m.ID(), method: m.Method(), params: m.Params()}
	if req.params.Exists() && !req.params.IsObject() {
		return nil, invalidParams("params must be an object")
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.opts.SessionEraOnly {
		return s.classifySessionEraOnly(req)
	}
	if req.method == "initialize" {
		if s.era == eraStateless {
			pv := req.params.Get("protocolVersion")
			return nil, unsupportedVersion(pv.String(), []string{statelessVersion})
		}
		return s.acceptInitialize(req)
	}

	pv, caps := mcp.Claims(m.Get("params._meta"))
	switch {
	case !pv.Exists() && s.era == eraStateless:
		return nil, invalidParams("this connection speaks MCP %s: params._meta[%q] is required", statelessVersion, metaProtocolVersion)
	case !pv.Exists(), s.era == eraSession:
		// The session era, even before initialize; an envelope on a
		// session-era connection is ignored.
		if spec, ok := lookupMethod(req.method); !ok || !spec.session {
			return nil, methodNotFound(req.method, false)
		}
		req.caps = gjson.Parse(s.clientCaps)
		return req, nil
	}

	if pv.Type != gjson.String {
		return nil, invalidParams("params._meta[%q] must be a string", metaProtocolVersion)
	}
	if pv.Str != statelessVersion {
		supported := []string{statelessVersion}
		if s.era == eraUnset { // this connection could still initialize
			supported = append(supported, sessionEraVersions...)
		}
		return nil, unsupportedVersion(pv.Str, supported)
	}
	if !caps.IsObject() {
		return nil, invalidParams("params._meta[%q] is required (an object)", metaClientCapabilities)
	}
	if spec, ok := lookupMethod(req.method); !ok || !spec.stateless {
		// An unknown method does not decide the era.
		return nil, methodNotFound(req.method, true)
	}
	s.era = eraStateless
	req.stateless = true
	req.caps = caps
	return req, nil
}

// acceptInitialize puts the connection in the session era on an
// initialize request, recording the version it negotiates and the client's
// capabilities. It is handled in classify, in arrival order, so that the
// requests after it see its era and capabilities. s.mu is held.
func (s *server) acceptInitialize(req *request) (*request, *rpcError) {
	pv := req.params.Get("protocolVersion")
	if pv.Type != gjson.String {
		return nil, invalidParams("initialize needs params.protocolVersion (a string)")
	}
	s.era = eraSession
	s.protocolVersion = negotiate(pv.Str)
	s.clientCaps = "{}"
	if caps := req.params.Get("capabilities"); caps.IsObject() {
		s.clientCaps = caps.Raw
	}
	req.caps = gjson.Parse(s.clientCaps)
	return req, nil
}

// classifySessionEraOnly is classify for [Options.SessionEraOnly]: the
// server knows only the session era's methods, ignores every _meta key,
// and serves nothing but initialize (and ping, answered by the read loop)
// before initialize. s.mu is held.
func (s *server) classifySessionEraOnly(req *request) (*request, *rpcError) {
	if spec, ok := lookupMethod(req.method); !ok || !spec.session {
		// The plain answer of a server that never heard of the method.
		return nil, &rpcError{code: frame.CodeMethodNotFound, message: "method not found: " + req.method}
	}
	if req.method == "initialize" {
		return s.acceptInitialize(req)
	}
	if s.era != eraSession {
		return nil, &rpcError{code: frame.CodeInvalidRequest,
			message: fmt.Sprintf("invalid request: %s before initialize (this server speaks the session era only: initialize first)", req.method)}
	}
	if s.opts.RefuseReservedMeta {
		reserved := ""
		req.params.Get("_meta").ForEach(func(k, _ gjson.Result) bool {
			if strings.HasPrefix(k.Str, "io.modelcontextprotocol/") {
				reserved = k.Str
				return false
			}
			return true
		})
		if reserved != "" {
			return nil, &rpcError{code: frame.CodeInvalidRequest,
				message: fmt.Sprintf("invalid request: params._meta carries %q, which a session-era connection does not take", reserved)}
		}
	}
	req.caps = gjson.Parse(s.clientCaps)
	return req, nil
}

// call runs the handler of req's method and, on a 2026-07-28 request,
// stamps the result.
func (s *server) call(ctx context.Context, req *request) (object, error) {
	spec, _ := lookupMethod(req.method) // classify checked it exists in req's era
	res, err := spec.handle(s, ctx, req)
	if err != nil || !req.stateless {
		return res, err
	}
	complete := res["resultType"] == nil // the handler's result is complete
	if (complete || res["resultType"] == "complete") && spec.cache != nil {
		h := spec.cache(s, req)
		res["ttlMs"], res["cacheScope"] = h.ttlMs, h.scope
	}
	meta, _ := res["_meta"].(object)
	if meta == nil && complete && stampsAround(res) {
		// The common case: marshalStamped writes s.resultMeta, encoded
		// once, and the resultType around the handler's members.
		delete(res, "_meta")
		req.stamped = true
		return res, nil
	}
	if complete {
		res["resultType"] = "complete"
	}
	if meta == nil {
		res["_meta"] = s.resultMeta
		return res, nil
	}
	meta[metaServerInfo] = s.identity
	return res, nil
}

// stampsAround reports whether a "_meta" member would come first in res's
// encoding and a "resultType" member last: encoding/json writes a map's
// members in the order of their names, and res has no other name (but
// "_meta", which is replaced) before "_meta" or after "resultType".
func stampsAround(res object) bool {
	for k := range res {
		if k < "_meta" || k >= "resultType" {
			return false
		}
	}
	return true
}

// marshalStamped encodes res, for which stampsAround holds, with meta
// (JSON as marshal writes it) as its "_meta" member and "complete" as its
// resultType: the bytes marshal would write for res with
// res["_meta"] = json.RawMessage(meta) and res["resultType"] = "complete",
// without encoding/json checking and compacting meta again for every
// result, or sorting two more names.
func marshalStamped(res object, meta []byte) []byte {
	const last = `"resultType":"complete"}`
	var buf bytes.Buffer
	buf.Grow(len(meta) + 128) // a short result's encoding fits at once
	buf.WriteString(`{"_meta":`)
	buf.Write(meta)
	start := buf.Len()
	b := encodeTo(&buf, res)
	if len(b) == start+2 { // res is empty: {"_meta":META,"resultType":"complete"}
		return append(append(b[:start], ','), last...)
	}
	b[start] = ','                                    // res's '{' joins its members to meta
	return append(append(b[:len(b)-1], ','), last...) // and its '}' them to the resultType
}

func methodNotFound(name string, stateless bool) *rpcError {
	msg := "method not found: " + name
	if _, ok := lookupMethod(name); ok {
		if stateless {
			msg = fmt.Sprintf("method not found: %s is not part of MCP %s", name, statelessVersion)
		} else {
			msg = fmt.Sprintf("method not found: %s is part of MCP %s only", name, statelessVersion)
		}
	}
	return &rpcError{code: frame.CodeMethodNotFound, message: msg}
}

// connEra returns the connection's era.
func (s *server) connEra() era {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.era
}

// initialize answers the session-era handshake; classify has already locked
// the era and recorded the client's capabilities.
func (s *server) initialize(_ context.Context, req *request) (object, error) {
	requested := req.params.Get("protocolVersion").Str
	version := negotiate(requested)
	s.log.Info("initialized", "protocolVersion", version, "requested", requested,
		"client", req.params.Get("clientInfo.name").String(), "clientVersion", req.params.Get("clientInfo.version").String())
	return object{
		"protocolVersion": version,
		"capabilities":    capabilities,
		"serverInfo":      s.info,
		"instructions":    instructions,
	}, nil
}

// negotiate answers the version an initialize requested: the same when it
// is served, else the latest session-era version.
func negotiate(requested string) string {
	if slices.Contains(sessionEraVersions, requested) {
		return requested
	}
	return latestSessionVersion
}

// capabilities are the server's capabilities, the same in both eras.
var capabilities = json.RawMessage(`{"completions":{},"logging":{},` +
	`"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}}`)

const instructions = "The example MCP server bundled with mcp-stdio. Tools: echo, add, slow " +
	"(progress, cancellation), bytes (large results), ask (elicitation), toggle (adds or removes " +
	"the bonus tool). Resources: example://counter (tool calls so far, subscribable), " +
	"example://readme, example://echo/{text}. Prompt: greet."

// Logging levels, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel is the session-era logging/setLevel.
func (s *server) setLevel(_ context.Context, req *request) (object, error) {
	level := req.params.Get("level")
	if level.Type != gjson.String || !slices.Contains(logLevels, level.Str) {
		return nil, invalidParams("level must be one of %s", strings.Join(logLevels, ", "))
	}
	s.mu.Lock()
	s.logLevel = level.Str
	s.mu.Unlock()
	return object{}, nil
}

// paginate returns the page of items the request's cursor points at and the
// cursor of the next page ("" for the last page). Cursors are opaque to the
// client: base64 of the list's method and an offset.
func paginate[T any](s *server, req *request, items []T) ([]T, string, error) {
	offset := 0
	if c := req.params.Get("cursor"); c.Exists() {
		off, ok := parseCursor(req.method, c)
		if !ok {
			return nil, "", invalidParams("unknown cursor")
		}
		offset = min(off, len(items))
	}
	if s.opts.PageSize <= 0 {
		return items[offset:], "", nil
	}
	end := min(offset+s.opts.PageSize, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(req.method + "@" + strconv.Itoa(end)))
	}
	return items[offset:end], next, nil
}

func parseCursor(method string, c gjson.Result) (int, bool) {
	if c.Type != gjson.String {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Str)
	if err != nil {
		return 0, false
	}
	rest, ok := bytes.CutPrefix(b, []byte(method+"@"))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// page puts a list page and its cursor into a result.
func page(key string, items any, next string) object {
	res := object{key: items}
	if next != "" {
		res["nextCursor"] = next
	}
	return res
}

// marshal encodes v, which the server built itself, without HTML escaping.
func marshal(v any) []byte {
	var buf bytes.Buffer
	return encodeTo(&buf, v)
}

// encodeTo appends v's JSON to buf, as marshal writes it, and returns
// buf's bytes.
func encodeTo(buf *bytes.Buffer, v any) []byte {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only unsupported Go values fail; the server builds none.
		panic(fmt.Sprintf("exampleserver: marshal: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// notification builds a notification from the server.
func notification(method string, params any) frame.Message {
	return mustMessage(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params})
}

// outgoingRequest builds a request from the server to the client.
func outgoingRequest(id frame.ID, method string, params any) frame.Message {
	return mustMessage(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id.Raw()), method, params})
}

func mustMessage(v any) frame.Message {
	m, err := frame.Parse(marshal(v))
	if err != nil {
		panic(fmt.Sprintf("exampleserver: built an invalid message: %v", err))
	}
	return m
}
