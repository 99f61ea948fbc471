//go:build linux

package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
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
