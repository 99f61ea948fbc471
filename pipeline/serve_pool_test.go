//go:build linux

package pipeline

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// modernCall is a 2026-07-28 tools/call of the sdk-server's tool name, with
// a progress token.
func modernCall(id, name string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// When every pooled child is busy (--max-modern-children 1, alice's call
// in flight) another principal gets 503 with Retry-After, and a JSON-RPC
// error that says to try again later; alice's call is not disturbed, and
// once it is over bob is served (alice's idle child makes room).
func TestServeFullPoolSaysWhenToComeBack(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(cfg *ServeConfig) {
		withOAuth(t)(cfg)
		cfg.MaxModernChildren = 1
	})
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, strings.NewReader(modernCall("1", "slow")))
	is.NoErr(err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": acceptBoth, "Authorization": "Bearer " + aliceToken,
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "slow"} {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusOK)
	events := bufio.NewReader(resp.Body)
	for { // alice's call has started: its progress came
		line, err := events.ReadString('\n')
		is.NoErr(err)
		if strings.HasPrefix(line, "data: ") {
			is.True(strings.Contains(line, `"method":"notifications/progress"`))
			break
		}
	}

	bob := func() (int, http.Header, string) {
		return h.rawDo(t, "POST", "/mcp", modernCall("2", "pid"),
			append(bearer(bobToken), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "pid")...)
	}
	status, hdr, body := bob()
	is.Equal(status, http.StatusServiceUnavailable)
	is.Equal(hdr.Get("Retry-After"), "1")
	is.Equal(body, `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"all 1 server processes are busy serving other users; try again later"}}`)
	is.True(strings.Contains(h.stderr.String(), "raise --max-modern-children"))

	cancel() // alice goes: her call is cancelled on her child, which is idle then
	resp.Body.Close()
	<-h.served // bob's refusal...
	<-h.served // ...and alice's request are over
	status, _, body = bob()
	is.Equal(status, http.StatusOK)
	is.Equal(strings.Count(body, `"id":2,"result"`), 1)
}
