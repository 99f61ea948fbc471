//go:build linux

package main_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// sharedListenWait bounds each wait of TestServeSharedListenOutlivesAnother.
const sharedListenWait = 30 * time.Second

// listenClosedLine is serve's debug line when a client's listen on a
// dual-era child ends.
var listenClosedLine = regexp.MustCompile(`msg="the client closed a listen"`)

// modernPost POSTs a 2026-07-28 request of method with params (the
// members of a JSON object, _meta aside) to endpoint.
func modernPost(t *testing.T, client *http.Client, endpoint, id, method, name, params string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sharedListen is one client's listen stream.
type sharedListen struct {
	client *http.Client
	resp   *http.Response
	events *bufio.Reader
}

// openSharedListen opens a listen asking for notifications (a JSON
// object) on a connection of its own, and reads its ack.
func openSharedListen(t *testing.T, endpoint, id, notifications string) *sharedListen {
	t.Helper()
	l := &sharedListen{client: &http.Client{Transport: &http.Transport{}, Timeout: sharedListenWait}}
	l.resp = modernPost(t, l.client, endpoint, id, "subscriptions/listen", "", `"notifications":`+notifications)
	t.Cleanup(l.close)
	if l.resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(l.resp.Body)
		t.Fatalf("listen %s: %d %s", id, l.resp.StatusCode, b)
	}
	l.events = bufio.NewReader(l.resp.Body)
	if ack := l.next(t); ack.Method() != "notifications/subscriptions/acknowledged" || ack.Get(`params._meta.io\.modelcontextprotocol\/subscriptionId`).Raw != id {
		t.Fatalf("listen %s: want its ack first, got %s", id, ack)
	}
	return l
}

// next returns the stream's next message.
func (l *sharedListen) next(t *testing.T) frame.Message {
	t.Helper()
	for {
		line, err := l.events.ReadString('\n')
		if err != nil {
			t.Fatalf("listen stream: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			return frame.MustParse(data)
		}
	}
}

func (l *sharedListen) close() {
	l.resp.Body.Close()
	l.client.CloseIdleConnections()
}

// Two clients listen through serve on the Go SDK's conformance server,
// which keeps listens per connection (serve's, for every client) and drops
// them all when any listen there ends: when one client's listen ends, the
// other's still hears of the tool list changing, whichever came first.
// (Before ShareListens kept one listen on the child, the other heard
// nothing, and the conformance suite's
// sep-2575-server-sends-tools-list-changed-on-subscription warned in two
// runs of three.) Skipped as TestConformance is.
func TestServeSharedListenOutlivesAnother(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Go SDK's conformance server")
	}
	if os.Getenv(confSkipEnv) == "1" {
		t.Skipf("%s=1", confSkipEnv)
	}
	bins := confBuild(t)
	for _, tc := range []struct {
		name          string
		first, second string
		ends          int // which ends: 0 or 1
	}{
		{"the first ends", `{"promptsListChanged":true}`, `{"toolsListChanged":true}`, 0},
		{"the second ends", `{"toolsListChanged":true}`, `{"promptsListChanged":true}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			g := startServeOf(t, bins.relay, bins.fixture.path)
			closed := g.log.Watch(listenClosedLine)
			ls := []*sharedListen{
				openSharedListen(t, g.url, "1", tc.first),
				openSharedListen(t, g.url, "2", tc.second),
			}
			ls[tc.ends].close()
			closed.Next(t, sharedListenWait)

			client := &http.Client{Transport: &http.Transport{}, Timeout: sharedListenWait}
			defer client.CloseIdleConnections()
			resp := modernPost(t, client, g.url, "9", "tools/call", "test_trigger_tool_change", `"name":"test_trigger_tool_change","arguments":{}`)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, http.StatusOK)
			is.True(strings.Contains(string(body), `"id":9,"result"`))

			stays := 1 - tc.ends
			m := ls[stays].next(t)
			is.Equal(m.Method(), "notifications/tools/list_changed")
			is.Equal(m.Get(`params._meta.io\.modelcontextprotocol\/subscriptionId`).Raw, []string{"1", "2"}[stays])
		})
	}
}
