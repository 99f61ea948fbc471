package mw

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// modernMeta is the _meta of a valid 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// hdr builds a header from name, value pairs; a name may repeat.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// ladderCase is a request and the ladder's answer to it: want 0 means it
// passes.
type ladderCase struct {
	name   string
	body   string
	header http.Header
	json   bool // the answer is JSON, not an event stream
	status int
	want   string // the refusal's body
}

func runLadder(t *testing.T, o ModernLadderOptions, tt ladderCase) (passed []frame.Message) {
	t.Helper()
	is := is.New(t)
	next := &recorder{}
	h := ValidateModern(o)(Duplex{ToServer: next, ToClient: Discard()}).ToServer
	m := frame.MustParse(tt.body).WithHeaders(tt.header)
	err := h.Handle(on(t.Context(), newPOST(!tt.json)), m)
	status, body := refusal(err)
	is.Equal(status, tt.status) // HTTP status
	is.Equal(body, tt.want)     // refusal body
	if tt.status == 0 {
		is.Equal(len(next.all()), 1) // passed on
	} else {
		is.Equal(len(next.all()), 0) // stopped
	}
	return next.all()
}

// modernHeaders are the routing headers of a tools/call of "echo".
func modernHeaders(kv ...string) http.Header {
	h := hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			h.Del(kv[i])
			continue
		}
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestValidateModernRungs(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo",` + modernMeta + `}}`
	callV := func(v string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":` + v + `,"io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	listen := `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	listenHeaders := hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	for _, tt := range []ladderCase{
		{name: "valid call", body: call, header: modernHeaders()},
		{name: "valid listen on an event stream", body: listen, header: listenHeaders},
		{name: "valid discover", body: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover")},
		{name: "valid read, encoded Mcp-Name", body: `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///caf\u00e9",` + modernMeta + `}}`,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", frame.EncodeHeaderValue("file:///café"))},
		{name: "header names in any case", body: call, header: hdr("mcp-protocol-version", "2026-07-28", "MCP-METHOD", "tools/call", "mcp-name", "echo")},

		// rung 1: listen needs an event stream
		{name: "listen answered with JSON", body: listen, header: listenHeaders, json: true, status: 406,
			want: `{"jsonrpc":"2.0","id":"l","error":{"code":-32600,"message":"Not Acceptable: subscriptions/listen is answered with an event stream; Accept must include text/event-stream"}}`},
		{name: "listen answered with JSON wins over a missing _meta", body: `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			header: hdr("Mcp-Method", "tools/list", "Mcp-Method", "x"), json: true, status: 406,
			want: `{"jsonrpc":"2.0","id":"l","error":{"code":-32600,"message":"Not Acceptable: subscriptions/listen is answered with an event stream; Accept must include text/event-stream"}}`},

		// rung 2: a routing header twice
		{name: "method header twice", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Method", "tools/call", "Mcp-Name", "echo"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Method header is sent more than once"}}`},
		{name: "name header twice", body: call,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo", "Mcp-Name", "echo"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is sent more than once"}}`},
		{name: "protocol version header twice", body: callV(`"2025-01-01"`),
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Protocol-Version header is sent more than once"}}`},

		// rung 3: _meta
		{name: "no _meta, wrong headers too", body: `{"jsonrpc":"2.0","id":7,"method":"server/discover"}`, header: hdr("Mcp-Method", "nope"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: params._meta is required on a 2026-07-28 request"}}`},
		{name: "_meta not an object", body: `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":[]}}`, header: hdr(), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: params._meta is required on a 2026-07-28 request"}}`},
		{name: "no protocolVersion", body: `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, header: hdr(), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: params._meta lacks io.modelcontextprotocol/protocolVersion"}}`},
		{name: "no clientCapabilities", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, header: modernHeaders("Mcp-Name", "other"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: params._meta lacks io.modelcontextprotocol/clientCapabilities (an object)"}}`},
		{name: "clientCapabilities not an object", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":true}}}`, header: modernHeaders(), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: params._meta lacks io.modelcontextprotocol/clientCapabilities (an object)"}}`},

		// rung 4: header agreement, version then method then name
		{name: "no version header", body: call, header: modernHeaders("MCP-Protocol-Version", "-", "Mcp-Method", "x"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the MCP-Protocol-Version header is missing"}}`},
		{name: "version header differs, before an unsupported version", body: callV(`"2099-01-01"`), header: modernHeaders("Mcp-Method", "x"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the MCP-Protocol-Version header does not match params._meta's protocolVersion"}}`},
		{name: "no method header", body: call, header: modernHeaders("Mcp-Method", "-", "Mcp-Name", "-"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Method header is missing"}}`},
		{name: "method header differs", body: call, header: modernHeaders("Mcp-Method", "Tools/Call", "Mcp-Name", "x"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Method header does not match the method"}}`},
		{name: "no name header", body: call, header: modernHeaders("Mcp-Name", "-"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is missing"}}`},
		{name: "name header differs", body: call, header: modernHeaders("Mcp-Name", "Echo"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header does not match params.name"}}`},
		{name: "name header bad base64", body: call, header: modernHeaders("Mcp-Name", "=?base64?ZWNob?="), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is not valid =?base64?…?="}}`},
		{name: "name header encoded", body: call, header: modernHeaders("Mcp-Name", "=?base64?ZWNobw==?=")},
		{name: "upper-case markers are literal", body: call, header: modernHeaders("Mcp-Name", "=?BASE64?ZWNobw==?="), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header does not match params.name"}}`},
		{name: "name header without a name", body: `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{` + modernMeta + `}}`, header: modernHeaders("Mcp-Method", "prompts/get"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: an Mcp-Name header is sent but params.name is not a string"}}`},
		{name: "no name, no name header", body: `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{` + modernMeta + `}}`, header: modernHeaders("Mcp-Method", "prompts/get", "Mcp-Name", "-")},
		{name: "read uri differs", body: `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a",` + modernMeta + `}}`,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "file:///b"), status: 400,
			want: `{"jsonrpc":"2.0","id":2,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header does not match params.uri"}}`},
		{name: "empty name header for an empty name", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"",` + modernMeta + `}}`, header: modernHeaders("Mcp-Name", "")},

		// rung 5: the version
		{name: "version not a string", body: callV(`20260728`), header: modernHeaders("MCP-Protocol-Version", "20260728"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: io.modelcontextprotocol/protocolVersion must be a string"}}`},
		{name: "unsupported version", body: callV(`"2099-01-01"`), header: modernHeaders("MCP-Protocol-Version", "2099-01-01"), status: 400,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"Unsupported protocol version \"2099-01-01\"","data":{"supported":["2026-07-28"],"requested":"2099-01-01"}}}`},
		{name: "a session-era version is unsupported", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			header: hdr("MCP-Protocol-Version", "2025-11-25", "Mcp-Method", "initialize"), status: 400,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version \"2025-11-25\"","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}`},

		// rung 6: the method
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":3,"method":"tools/destroy","params":{` + modernMeta + `}}`,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/destroy"), status: 404,
			want: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: \"tools/destroy\""}}`},
		{name: "ping is not a 2026-07-28 request", body: `{"jsonrpc":"2.0","id":3,"method":"ping","params":{` + modernMeta + `}}`,
			header: hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "ping"), status: 404,
			want: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: \"ping\""}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passed := runLadder(t, ModernLadderOptions{}, tt)
			if len(passed) == 1 {
				is.New(t).Equal(passed[0].String(), tt.body) // passed unchanged
			}
		})
	}
}

func TestValidateModernVersions(t *testing.T) {
	body := func(v string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	o := ModernLadderOptions{Versions: []string{"2026-07-28", "2026-12-01"}}
	runLadder(t, o, ladderCase{body: body("2026-12-01"), header: hdr("MCP-Protocol-Version", "2026-12-01", "Mcp-Method", "tools/list")})
	runLadder(t, o, ladderCase{body: body("2027-01-01"), header: hdr("MCP-Protocol-Version", "2027-01-01", "Mcp-Method", "tools/list"), status: 400,
		want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version \"2027-01-01\"","data":{"supported":["2026-07-28","2026-12-01"],"requested":"2027-01-01"}}}`})
}

func TestValidateModernNotificationsExempt(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"1999"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/whatever","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		t.Run(body, func(t *testing.T) {
			is := is.New(t)
			next := &recorder{}
			h := ValidateModern(ModernLadderOptions{})(Duplex{ToServer: next, ToClient: Discard()}).ToServer
			m := frame.MustParse(body).WithHeaders(hdr("Mcp-Method", "a", "Mcp-Method", "b"))
			is.NoErr(h.Handle(on(t.Context(), newPOST(false)), m))
			is.Equal(next.lines(), []string{body})
		})
	}
}

func TestValidateModernOutsideServe(t *testing.T) {
	// no Exchange: the Accept rung is skipped, the others hold
	is := is.New(t)
	next := &recorder{}
	h := ValidateModern(ModernLadderOptions{})(Duplex{ToServer: next, ToClient: Discard()}).ToServer
	listen := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{},` + modernMeta + `}}`)
	is.NoErr(h.Handle(context.Background(), listen.WithHeaders(hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"))))
	status, _ := refusal(h.Handle(context.Background(), listen))
	is.Equal(status, 400)
}

func TestValidateModernClaimlessRead(t *testing.T) {
	o := ModernLadderOptions{AcceptClaimlessResourceRead: true}
	read := `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"ui://app/index.html"}}`
	filled := `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"ui://app/index.html","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, tt := range []struct {
		ladderCase
		out string // what passes
	}{
		{ladderCase: ladderCase{name: "no headers", body: read, header: hdr()}, out: filled},
		{ladderCase: ladderCase{name: "matching routing headers", body: read, header: hdr("Mcp-Method", "resources/read", "Mcp-Name", "ui://app/index.html")}, out: filled},
		{ladderCase: ladderCase{name: "_meta without a version",
			body:   `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"u","_meta":{"k":1}}}`,
			header: hdr()},
			out: `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"u","_meta":{"k":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{ladderCase: ladderCase{name: "method header differs", body: read, header: hdr("Mcp-Method", "tools/call"), status: 400,
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Method header does not match the method"}}`}},
		{ladderCase: ladderCase{name: "name header differs", body: read, header: hdr("Mcp-Name", "ui://app/other.html"), status: 400,
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header does not match params.uri"}}`}},
		{ladderCase: ladderCase{name: "name header bad base64", body: read, header: hdr("Mcp-Name", "=?base64?!!?="), status: 400,
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is not valid =?base64?…?="}}`}},
		{ladderCase: ladderCase{name: "name header twice", body: read, header: hdr("Mcp-Name", "ui://app/index.html", "Mcp-Name", "ui://app/index.html"), status: 400,
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is sent more than once"}}`}},
		{ladderCase: ladderCase{name: "_meta not an object", body: `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"u","_meta":[]}}`, header: hdr(), status: 400,
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: params._meta is not an object"}}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			passed := runLadder(t, o, tt.ladderCase)
			if tt.status == 0 {
				is.Equal(passed[0].String(), tt.out)
				is.Equal(passed[0].Header().Get(frame.HeaderProtocolVersion), "2026-07-28")         // the claim, in the header too
				is.Equal(passed[0].Header().Get(frame.HeaderName), tt.header.Get(frame.HeaderName)) // other headers kept
			}
		})
	}
}

func TestValidateModernClaimlessOff(t *testing.T) {
	// without the option a claimless read that does reach the ladder
	// (it never does behind ByEra) is a request without _meta
	runLadder(t, ModernLadderOptions{}, ladderCase{
		body: `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"u"}}`, header: hdr(), status: 400,
		want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: params._meta is required on a 2026-07-28 request"}}`})
}

func TestClassifyEraClaimless(t *testing.T) {
	read := `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"u"}}`
	for _, tt := range []struct {
		name           string
		body           string
		header         http.Header
		plain, lenient Era
	}{
		{"claimless read", read, hdr(), EraSession, EraStateless},
		{"with routing headers", read, hdr("Mcp-Method", "resources/read", "Mcp-Name", "u"), EraSession, EraStateless},
		{"with a session", read, hdr("Mcp-Session-Id", "s1"), EraSession, EraSession},
		// row 158: a version header alone claims nothing the body backs
		{"version header alone", read, hdr("MCP-Protocol-Version", "2026-07-28"), EraSession, EraSession},
		{"version header alone, tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"), EraSession, EraSession},
		// a _meta version alone is a full claim: the ladder judges it
		{"_meta version alone", `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"u","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, hdr(), EraStateless, EraStateless},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, hdr(), EraSession, EraSession},
		{"a notification", `{"jsonrpc":"2.0","method":"resources/read"}`, hdr(), EraSession, EraSession},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := frame.MustParse(tt.body).WithHeaders(tt.header)
			is.Equal(ClassifyEra(m), tt.plain)
			is.Equal(ClassifyEraClaimless(m), tt.lenient)
		})
	}
}

func TestPartialClaims(t *testing.T) {
	// Row 158 through the fork: a version header alone takes the session
	// era; a _meta version alone takes the ladder, which refuses it for the
	// headers it lacks.
	is := is.New(t)
	session := &recorder{}
	ladder := ValidateModern(ModernLadderOptions{AcceptClaimlessResourceRead: true})(Duplex{ToServer: &recorder{}, ToClient: Discard()}).ToServer
	fork := ByEraWith(ClassifyEraClaimless, session, ladder, nil)
	ctx := on(t.Context(), newPOST(true))

	headerOnly := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).WithHeaders(hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"))
	is.NoErr(fork.Handle(ctx, headerOnly))
	is.Equal(len(session.all()), 1) // the session era's

	metaOnly := frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	status, body := refusal(fork.Handle(ctx, metaOnly))
	is.Equal(status, 400)
	is.True(strings.Contains(body, `"code":-32020`)) // the ladder's
	is.Equal(len(session.all()), 1)
}
