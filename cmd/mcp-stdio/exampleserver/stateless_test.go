package exampleserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

var (
	serverInfoPath     = "_meta." + metaKey(metaServerInfo)
	subscriptionIDPath = "_meta." + metaKey(metaSubscriptionID)
)

// statelessRequest is a 2026-07-28 request line.
func statelessRequest(id, method, params, caps string) string {
	p := `{"_meta":` + statelessMeta(caps)
	if params != "" {
		p += "," + params
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + p + `}}`
}

func TestDiscover(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{Name: "ex", Version: "9"})
	res := c.roundTrip(statelessRequest("1", "server/discover", "", `{}`)).Get("result")
	is.Equal(res.Get("resultType").String(), "complete")
	is.Equal(res.Get("supportedVersions").Raw, `["2026-07-28"]`)
	is.Equal(res.Get("capabilities.tools.listChanged").Bool(), true)
	is.Equal(res.Get("capabilities.resources.subscribe").Bool(), true)
	is.Equal(res.Get("ttlMs").Int(), int64(60000))
	is.Equal(res.Get("cacheScope").String(), "public")
	is.Equal(res.Get(serverInfoPath).Raw, `{"name":"ex","version":"9"}`)
	is.True(!res.Get("serverInfo").Exists()) // no top-level serverInfo on 2026-07-28
	is.True(res.Get("instructions").String() != "")
}

func TestStatelessResultsAreStamped(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	for _, tc := range []struct {
		method, params string
		ttl            int64
		scope          string // "" for a result that is not cacheable
	}{
		{"tools/list", "", 0, "private"},
		{"prompts/list", "", 60000, "public"},
		{"resources/list", "", 60000, "public"},
		{"resources/templates/list", "", 60000, "public"},
		{"resources/read", `"uri":"example://counter"`, 0, "private"},
		{"resources/read", `"uri":"example://readme"`, 60000, "public"},
		{"tools/call", `"name":"echo","arguments":{"text":"hi"}`, 0, ""},
		{"prompts/get", `"name":"greet","arguments":{"name":"Ada"}`, 0, ""},
		{"completion/complete", `"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}`, 0, ""},
	} {
		res := c.roundTrip(statelessRequest("1", tc.method, tc.params, `{}`)).Get("result")
		is.Equal(res.Get("resultType").String(), "complete") // every 2026-07-28 result
		is.True(res.Get(serverInfoPath).IsObject())
		if tc.scope == "" {
			is.True(!res.Get("ttlMs").Exists())
			is.True(!res.Get("cacheScope").Exists())
			continue
		}
		is.Equal(res.Get("ttlMs").Int(), tc.ttl)
		is.Equal(res.Get("cacheScope").String(), tc.scope)
	}
}

func TestStatelessVersionErrors(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	// A version the server does not serve, before the era is decided: the
	// session-era versions are on offer too.
	m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32022))
	is.Equal(m.Get("error.data").Raw, `{"requested":"2027-01-01","supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]}`)
	// Missing client capabilities.
	m = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32602))
	// A version that is not a string.
	m = c.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32602))
	// None of that decided the era: a session-era client may still initialize.
	is.Equal(c.initialize("2025-11-25", `{}`).Get("result.protocolVersion").String(), "2025-11-25")
}

func TestEraLockStateless(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.roundTrip(statelessRequest("1", "tools/list", "", `{}`))
	// initialize is refused on a 2026-07-28 connection.
	m := c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32022))
	is.Equal(m.Get("error.data").Raw, `{"requested":"2025-06-18","supported":["2026-07-28"]}`)
	// So is a request without the envelope.
	m = c.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	is.Equal(m.Get("error.code").Int(), int64(-32602))
	// An unsupported version lists only 2026-07-28 now.
	m = c.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	is.Equal(m.Get("error.data.supported").Raw, `["2026-07-28"]`)
	// Methods only the session era has do not exist on 2026-07-28.
	for _, method := range []string{"logging/setLevel", "resources/subscribe", "resources/unsubscribe"} {
		m = c.roundTrip(statelessRequest("5", method, `"level":"info","uri":"example://counter"`, `{}`))
		is.Equal(m.Get("error.code").Int(), int64(-32601))
	}
	// ping is answered on every era.
	is.Equal(c.roundTrip(`{"jsonrpc":"2.0","id":6,"method":"ping"}`).Get("result").Raw, `{}`)
}

func TestEraLockSession(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	// An enveloped request on a session-era connection is served as a
	// session-era request.
	res := c.roundTrip(statelessRequest("1", "tools/list", "", `{}`)).Get("result")
	is.True(res.Get("tools").IsArray())
	is.True(!res.Get("resultType").Exists())
	is.True(!res.Get("_meta").Exists())
	// The methods only 2026-07-28 has are unknown there.
	is.Equal(c.roundTrip(statelessRequest("2", "server/discover", "", `{}`)).Get("error.code").Int(), int64(-32601))
	is.Equal(c.roundTrip(statelessRequest("3", "subscriptions/listen", `"notifications":{}`, `{}`)).Get("error.code").Int(), int64(-32601))
}

func TestStatelessUnknownMethod(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	is.Equal(c.roundTrip(statelessRequest("1", "no/such", "", `{}`)).Get("error.code").Int(), int64(-32601))
	// That did not decide the era.
	is.Equal(c.initialize("2025-11-25", `{}`).Get("result.protocolVersion").String(), "2025-11-25")
}

func TestStatelessResourceNotFound(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	m := c.roundTrip(statelessRequest("1", "resources/read", `"uri":"example://nope"`, `{}`))
	is.Equal(m.Get("error.code").Int(), int64(-32602))
	is.Equal(m.Get("error.data.uri").String(), "example://nope")
}

const elicitCaps = `{"elicitation":{"form":{}}}`

func TestAskMultiRoundTrip(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	args := `"name":"ask","arguments":{"question":"Favourite colour?"}`
	res := c.roundTrip(statelessRequest("1", "tools/call", args, elicitCaps)).Get("result")
	is.Equal(res.Get("resultType").String(), "input_required")
	is.True(!res.Get("ttlMs").Exists()) // never cached
	is.True(res.Get(serverInfoPath).IsObject())
	ask := res.Get("inputRequests.ask")
	is.Equal(ask.Get("method").String(), "elicitation/create")
	is.Equal(ask.Get("params.message").String(), "Favourite colour?")
	is.Equal(ask.Get("params.mode").String(), "form")
	is.True(!ask.Get("id").Exists()) // an input request is not a JSON-RPC request
	state := res.Get("requestState")
	is.Equal(state.Type, gjson.String)

	// The retry, under a new id, carries the answer and the state back.
	retry := args + `,"inputResponses":{"ask":{"action":"accept","content":{"answer":"green"}}},"requestState":` + state.Raw
	res = c.roundTrip(statelessRequest("2", "tools/call", retry, elicitCaps)).Get("result")
	is.Equal(res.Get("resultType").String(), "complete")
	is.Equal(res.Get("content.0.text").String(), "The user answered: green")

	// A retry without the answer is asked again.
	res = c.roundTrip(statelessRequest("3", "tools/call", args+`,"requestState":`+state.Raw, elicitCaps)).Get("result")
	is.Equal(res.Get("resultType").String(), "input_required")

	// 2026-07-28 never sends the client a request.
	err, rest := c.finish()
	is.NoErr(err)
	is.Equal(len(rest), 0)
}

func TestAskRejectsForeignState(t *testing.T) {
	args := `"name":"ask","arguments":{"question":"Q1"}`
	answer := `,"inputResponses":{"ask":{"action":"accept","content":{"answer":"x"}}}`
	c := start(t, Options{})
	state := c.roundTrip(statelessRequest("1", "tools/call", args, elicitCaps)).Get("result.requestState").Str
	other := start(t, Options{}).roundTrip(statelessRequest("1", "tools/call", args, elicitCaps)).Get("result.requestState").Str

	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		t.Fatal(err)
	}
	longer := bytes.Clone(raw)
	longer[6]++ // a later expiry
	forged := bytes.Clone(raw)
	forged[len(forged)-1] ^= 1

	for _, tc := range []struct{ name, params string }{
		{"expiry changed", args + answer + `,"requestState":"` + base64.RawURLEncoding.EncodeToString(longer) + `"`},
		{"mac changed", args + answer + `,"requestState":"` + base64.RawURLEncoding.EncodeToString(forged) + `"`},
		{"other question", `"name":"ask","arguments":{"question":"Q2"}` + answer + `,"requestState":"` + state + `"`},
		{"other process", args + answer + `,"requestState":"` + other + `"`},
		{"not base64", args + answer + `,"requestState":"!!"`},
		{"truncated", args + answer + `,"requestState":"` + state[:20] + `"`},
		{"not a string", args + answer + `,"requestState":42`},
	} {
		m := c.roundTrip(statelessRequest("2", "tools/call", tc.params, elicitCaps))
		if code := m.Get("error.code").Int(); code != -32602 {
			t.Errorf("%s: got %s, want a -32602 error", tc.name, m.Raw)
		}
	}
}

func TestRequestStateExpires(t *testing.T) {
	is := is.New(t)
	s := newServer(Options{}, io.Discard)
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	tok := s.signState("q")
	is.True(s.verifyState(tok, "q"))
	is.True(!s.verifyState(tok, "r"))
	now = now.Add(stateTTL - time.Second)
	is.True(s.verifyState(tok, "q"))
	now = now.Add(time.Second)
	is.True(!s.verifyState(tok, "q"))
}

func TestAskStatelessWithoutElicitation(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	res := c.roundTrip(statelessRequest("1", "tools/call", `"name":"ask","arguments":{"question":"?"}`, `{}`)).Get("result")
	is.Equal(res.Get("isError").Bool(), true)
	is.Equal(res.Get("resultType").String(), "complete")
}

func TestListen(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.send(statelessRequest(`"L"`, "subscriptions/listen",
		`"notifications":{"toolsListChanged":true,"promptsListChanged":false,"resourceSubscriptions":["example://counter","example://nope"]}`, `{}`))
	ack := c.recv()
	is.Equal(ack.Get("method").String(), "notifications/subscriptions/acknowledged")
	is.Equal(ack.Get("params.notifications").Raw, `{"resourceSubscriptions":["example://counter"],"toolsListChanged":true}`) // the honoured subset
	is.Equal(ack.Get("params."+subscriptionIDPath).Raw, `"L"`)

	// A tool call changes the counter; toggle changes the tool list.
	c.send(statelessRequest("1", "tools/call", `"name":"toggle","arguments":{}`, `{}`))
	m := c.recv()
	is.Equal(m.Raw, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"uri":"example://counter"}}`)
	m = c.recv() // a 2026-07-28 connection gets list_changed only on the listen
	is.Equal(m.Raw, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`)
	is.Equal(c.recv().Get("id").Raw, "1")

	// Cancelling the listen ends it with its final result.
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	m = c.recv()
	is.Equal(m.Get("id").Raw, `"L"`)
	is.Equal(m.Get("result.resultType").String(), "complete")
	is.Equal(m.Get("result."+subscriptionIDPath).Raw, `"L"`)

	// No more events for it.
	c.send(statelessRequest("2", "tools/call", `"name":"echo","arguments":{"text":"x"}`, `{}`))
	is.Equal(c.recv().Get("id").Raw, "2")
}

func TestListenEndsAtStdinClose(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.send(statelessRequest(`7`, "subscriptions/listen", `"notifications":{}`, `{}`))
	ack := c.recv()
	is.Equal(ack.Get("params.notifications").Raw, `{}`)
	err, rest := c.finish()
	is.NoErr(err)
	is.Equal(len(rest), 1)
	is.Equal(rest[0], `{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-stdio-example","version":"0.0.0"},"io.modelcontextprotocol/subscriptionId":7},"resultType":"complete"}}`)
}

func TestListenBadParams(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	is.Equal(c.roundTrip(statelessRequest("1", "subscriptions/listen", "", `{}`)).Get("error.code").Int(), int64(-32602))
	is.Equal(c.roundTrip(statelessRequest("2", "subscriptions/listen", `"notifications":{"resourceSubscriptions":"x"}`, `{}`)).Get("error.code").Int(), int64(-32602))
}

func TestTwoListensEachGetTheirEvents(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.send(statelessRequest("1", "subscriptions/listen", `"notifications":{"toolsListChanged":true}`, `{}`))
	c.recv()
	c.send(statelessRequest("2", "subscriptions/listen", `"notifications":{"resourceSubscriptions":["example://counter"]}`, `{}`))
	c.recv()
	c.send(statelessRequest("3", "tools/call", `"name":"toggle","arguments":{}`, `{}`))
	var got []string
	for range 3 {
		m := c.recv()
		got = append(got, m.Get("method").String()+" "+m.Get("params."+subscriptionIDPath).Raw+m.Get("id").Raw)
	}
	is.Equal(strings.Join(got, "|"), "notifications/resources/updated 2|notifications/tools/list_changed 1| 3")
}

// The written-out path of the reserved log level key is what gjson.Escape
// makes of the key, and it finds the key in a request.
func TestMetaPathsEscapeTheirKeys(t *testing.T) {
	is := is.New(t)
	is.Equal(pathLogLevel(), "_meta."+gjson.Escape(metaLogLevel))
	params := gjson.Parse(`{"_meta":{"io.modelcontextprotocol":{"x":1},"` + metaLogLevel + `":"found"}}`)
	is.Equal(params.Get(pathLogLevel()).Str, "found")
}

// marshalStamped writes the bytes marshal writes for the result with the
// server's _meta and resultType in it, whatever the result holds;
// stampsAround says when a member sorts before "_meta" or after
// "resultType", which marshalStamped is not for.
func TestMarshalStampedIsMarshalWithStamps(t *testing.T) {
	is := is.New(t)
	meta := marshal(object{metaServerInfo: serverIdentity{Name: "x <&> y", Version: "1"}})
	for _, res := range []object{
		{},
		{"content": []any{object{"type": "text", "text": "hello, <serve> & \u2028"}}},
		{"content": []any{}, "cacheScope": "public", "nextCursor": "c"},
		{"isError": true, "content": object{"b": 1, "a": json.RawMessage(`{"z": [1, 2]}`)}},
		{"a": nil, "resultTyp": "", "_metaphor": 1},
	} {
		is.True(stampsAround(res))
		got := string(marshalStamped(res, meta))
		res["_meta"] = json.RawMessage(meta)
		res["resultType"] = "complete"
		is.Equal(got, string(marshal(res))) // the result as marshal writes it
	}
	is.True(!stampsAround(object{"content": 1, "Zebra": 2}))
	is.True(!stampsAround(object{"$ref": 1}))
	is.True(!stampsAround(object{"content": 1, "structuredContent": 2}))
	is.True(!stampsAround(object{"ttlMs": 1}))
	is.True(!stampsAround(object{"resultType": "incomplete"}))
}
