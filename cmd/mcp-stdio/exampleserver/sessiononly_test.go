package exampleserver

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

// With SessionEraOnly the server is a server written before 2026-07-28:
// these tests pin what a gateway probing it sees.

func TestSessionEraOnlyDiscoverIsMethodNotFound(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{SessionEraOnly: true})
	for i, line := range []string{
		statelessRequest(`1`, "server/discover", "", `{}`),
		`{"jsonrpc":"2.0","id":2,"method":"server/discover"}`,
		statelessRequest(`3`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`, `{}`),
	} {
		m := c.roundTrip(line)
		is.Equal(m.Get("error.code").Int(), int64(-32601)) // before initialize
		if i == 0 {
			is.Equal(m.Get("error.message").Str, "method not found: server/discover")
		}
	}
	c.initialize("2025-11-25", `{}`)
	m := c.roundTrip(statelessRequest(`4`, "server/discover", "", `{}`))
	is.Equal(m.Get("error.code").Int(), int64(-32601)) // and after
}

func TestSessionEraOnlyRefusesRequestsBeforeInitialize(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{SessionEraOnly: true})
	for _, line := range []string{
		statelessRequest(`1`, "tools/list", "", `{}`),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"early"}}}`,
	} {
		m := c.roundTrip(line)
		is.Equal(m.Get("error.code").Int(), int64(-32600))
		is.True(strings.HasSuffix(m.Get("error.message").Str, "before initialize (this server speaks the session era only: initialize first)"))
	}
	m := c.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	is.Equal(m.Get("result").Raw, `{}`) // ping is answered in any state
	m = c.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"no/such"}`)
	is.Equal(m.Get("error.code").Int(), int64(-32601))
}

func TestSessionEraOnlyInitializeNegotiatesTheSessionEra(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{SessionEraOnly: true})
	res := c.initialize("2026-07-28", `{}`).Get("result")
	is.Equal(res.Get("protocolVersion").Str, "2025-11-25")
	is.Equal(res.Get("serverInfo.name").Str, defaultName)
}

func TestSessionEraOnlyIgnoresTheEnvelope(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{SessionEraOnly: true})
	c.initialize("2025-11-25", `{"elicitation":{}}`)
	for _, tc := range []struct{ method, params string }{
		{"tools/list", ""},
		{"resources/read", `"uri":"example://readme"`},
		{"tools/call", `"name":"echo","arguments":{"text":"hi"}`},
	} {
		res := c.roundTrip(statelessRequest(`5`, tc.method, tc.params, `{}`)).Get("result")
		is.True(res.IsObject())
		is.True(!res.Get("resultType").Exists())
		is.True(!res.Get("ttlMs").Exists())
		is.True(!res.Get(serverInfoPath).Exists())
	}
	// A version no server serves is not looked at either.
	m := c.roundTrip(`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`)
	is.True(m.Get("result.tools").IsArray())

	// The ask tool elicits with a real request, even on an enveloped call
	// whose _meta declares no elicitation capability.
	c.send(statelessRequest(`7`, "tools/call", `"name":"ask","arguments":{"question":"name?"}`, `{}`))
	ask := c.recv()
	is.Equal(ask.Get("method").Str, "elicitation/create")
	c.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"answer":"Ada"}}}`, ask.Get("id").Raw)
	res := c.recv()
	is.Equal(res.Get("id").Raw, `7`)
	is.True(!res.Get("result.resultType").Exists())
	is.Equal(res.Get("result.content.0.text").Str, "The user answered: Ada")
}

// With RefuseReservedMeta a session-era-only server refuses the envelope
// after initialize, as a strict server of the session era does, and serves
// the same request without it.
func TestSessionEraOnlyRefusesReservedMeta(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{SessionEraOnly: true, RefuseReservedMeta: true})
	c.initialize("2025-11-25", `{}`)
	m := c.roundTrip(statelessRequest(`5`, "tools/list", "", `{}`))
	is.Equal(m.Get("error.code").Int(), int64(-32600))
	is.True(strings.Contains(m.Get("error.message").Str, "io.modelcontextprotocol/"))
	m = c.roundTrip(`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`)
	is.True(m.Get("result.tools").IsArray())
}

// The default server keeps its 2026-07-28 face: the flag is off unless set.
func TestDualEraByDefault(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	res := c.roundTrip(statelessRequest(`1`, "server/discover", "", `{}`)).Get("result")
	is.Equal(res.Get("supportedVersions").Raw, `["2026-07-28"]`)
}
