//go:build linux

package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// Serve under hostile clients, end to end: the built binary, real
// children, real loopback connections.

// modernRequest returns a 2026-07-28 POST of method to endpoint, with
// params (a JSON object's members, without braces) beside its _meta.
func modernRequest(t *testing.T, endpoint, id, method, params string) *http.Request {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params
	if params != "" {
		body += ","
	}
	body += `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	return req
}

// stillServing checks that the gateway at endpoint still answers: a
// request for a path it does not serve gets its 404.
func stillServing(t *testing.T, endpoint string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/elsewhere"
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(u.String())
	if err != nil {
		t.Fatalf("serve does not answer any more: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("serve answered %d for a path it does not serve", resp.StatusCode)
	}
}

// exampleChild is the command line of the bundled example server, logging
// every request it gets on its stderr (which serve passes on).
func exampleChild(t *testing.T, args ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"--", exe, "example-server", "--log-level", "debug"}, args...)
}

// mintedRequestLine is the example server's debug line for a request
// under an id serve's router minted.
var mintedRequestLine = regexp.MustCompile(`msg=request .*id="\\"mcp-stdio/serve/([^"\\]*)\\"" method=tools/list`)

// The ids serve mints toward a pooled child carry a random part drawn for
// that child: two gateways' children (two runs) see different ones, and
// within one child only the counter after it moves. Knowing one id, or
// the counter, does not give another child's.
func TestServeMintedIDsAreNotGuessable(t *testing.T) {
	is := is.New(t)
	minted := func() []string {
		t.Helper()
		_, stderr, endpoint := startGateway(t, exampleChild(t)...)
		client := &http.Client{Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		for _, id := range []string{"1", "1"} { // the same client id twice
			resp, err := client.Do(modernRequest(t, endpoint, id, "tools/list", ""))
			is.NoErr(err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, http.StatusOK)
			is.True(strings.Contains(string(body), `"id":1,"result"`)) // exactly one answer, under the client's id
			is.Equal(strings.Count(string(body), `"id":1`), 1)
		}
		w := stderr.Watch(mintedRequestLine)
		ids := []string{w.Next(t, cmdTestWait)[1], w.Next(t, cmdTestWait)[1]}
		stillServing(t, endpoint)
		return ids
	}
	shape := regexp.MustCompile(`^([A-Za-z0-9_-]{16})/([0-9]+)$`)
	first, second := minted(), minted()
	t.Logf("minted: %q, %q", first, second)
	var salts []string
	for _, ids := range [][]string{first, second} {
		a, b := shape.FindStringSubmatch(ids[0]), shape.FindStringSubmatch(ids[1])
		is.True(a != nil && b != nil) // mcp-stdio/serve/<16 random characters>/<n>
		is.Equal(a[1], b[1])          // one random part per child...
		is.True(a[2] != b[2])         // ...and a counter after it
		salts = append(salts, a[1])
	}
	is.True(salts[0] != salts[1]) // another child, another random part
}

// childListenLine is the example server's debug line for a
// subscriptions/listen it was sent.
var childListenLine = regexp.MustCompile(`msg=request component=example-server .*method=subscriptions/listen`)

// toggleDone is the example server's debug line for the toggle call.
var toggleDone = regexp.MustCompile(`msg=request component=example-server .*method=tools/call`)

// Many clients listen on one pooled child (the attack found the fifth one
// left without list_changed): up to --max-listens each gets its own ack
// and its own copy of the child's tools/list_changed, under its own
// subscription id; a dual-era child is sent one listen for them all (a
// child of the session era none: serve serves the listens). One more
// listen gets 503 with Retry-After and an error naming --max-listens.
func TestServeListenersShareOnePooledChild(t *testing.T) {
	for _, tc := range []struct {
		name       string
		child      []string
		listens    int
		childSaw   int // subscriptions/listen requests the child got
		maxListens string
	}{
		{"dual-era, 5", nil, 5, 1, "5"},
		{"dual-era, 300", nil, 300, 1, "300"},
		{"session era, 300", []string{"--session-era-only"}, 300, 0, "300"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, stderr, endpoint := startGateway(t, append([]string{"--max-listens", tc.maxListens}, exampleChild(t, tc.child...)...)...)
			listens := make([]*listenStream, tc.listens)
			for i := range listens {
				listens[i] = openListen(t, endpoint, strconv.Itoa(i+1)) // each reads its own ack
			}

			// One more is refused, and says why.
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			resp, err := client.Do(modernRequest(t, endpoint, "0", "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
			is.NoErr(err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
			is.Equal(resp.Header.Get("Retry-After"), "1")
			is.Equal(string(body), `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"this server already has `+tc.maxListens+` listeners, the most the gateway allows (--max-listens); try again later"}}`)

			// The child's tools list changes: every listener hears of it.
			req := modernRequest(t, endpoint, "99", "tools/call", `"name":"toggle","arguments":{}`)
			req.Header.Set("Mcp-Name", "toggle")
			resp, err = client.Do(req)
			is.NoErr(err)
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, http.StatusOK)
			is.Equal(strings.Count(string(body), `"id":99,"result"`), 1)
			for i, l := range listens {
				m := l.next(t)
				is.Equal(m.Method(), "notifications/tools/list_changed")
				is.Equal(m.Get(`params._meta.io\.modelcontextprotocol\/subscriptionId`).Raw, strconv.Itoa(i+1)) // its own id
			}

			// The child logged the listens it got before the toggle call.
			stderr.Watch(toggleDone).Next(t, cmdTestWait)
			log := stderr.String()
			log = log[:toggleDone.FindStringIndex(log)[0]]
			is.Equal(len(childListenLine.FindAllString(log, -1)), tc.childSaw)
			stillServing(t, endpoint)
		})
	}
}
