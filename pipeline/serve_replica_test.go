//go:build linux

package pipeline

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// raw posts body to h with hdr (name, value pairs) and returns the status,
// the session id header and the body.
func (h *serveHarness) raw(t *testing.T, body string, hdr ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// replicas returns two serve pipelines, "pod-a" and "pod-b", sharing one
// state key, as replicas behind a proxy do.
func replicas(t *testing.T, child ...string) (a, b *serveHarness) {
	key := mw.NewStateKey()
	mk := func(id string) *serveHarness {
		return newServeHarness(t, func(cfg *ServeConfig) {
			if len(child) > 0 {
				c := transporttest.Command("sdk-server", child...)
				cfg.Command, cfg.Env = c.Args, c.Env
			}
			cfg.StateKey, cfg.ReplicaID = key, id
		})
	}
	return mk("pod-a"), mk("pod-b")
}

// Session ids name their replica; another replica answers them, and any
// id with another replica's name, 404 like an unknown id.
func TestServeReplicaSessionIDs(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	a, b := replicas(t)
	status, sid, _ := a.raw(t, serveInitBody)
	is.Equal(status, http.StatusOK)
	is.Equal(mw.SessionReplica(sid), "pod-a")
	is.Equal(len(sid), len("pod-a.")+26)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	status, _, _ = a.raw(t, ping, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25")
	is.Equal(status, http.StatusOK) // its own replica answers

	_, _, unknown := b.raw(t, ping, "Mcp-Session-Id", "pod-b.NOSUCHSESSION", "MCP-Protocol-Version", "2025-11-25")
	for _, tt := range []struct {
		h   *serveHarness
		sid string
	}{
		{b, sid},                            // the session's id at the wrong replica
		{b, "pod-b." + sid[len("pod-a."):]}, // renamed to the replica asked
		{a, "pod-b." + sid[len("pod-a."):]}, // another replica's name here
	} {
		status, _, body := tt.h.raw(t, ping, "Mcp-Session-Id", tt.sid, "MCP-Protocol-Version", "2025-11-25")
		is.Equal(status, http.StatusNotFound) // tt.sid
		is.Equal(body, unknown)               // exactly as an unknown id
	}
	is.Equal(a.srv.Sessions(), 1)
	is.Equal(b.srv.Sessions(), 0)
}

var requestStateRe = regexp.MustCompile(`"requestState":"([^"]+)"`)

// A requestState sealed by one replica and retried at another, with the
// same state key, gets the clear -32602 refusal, never a hang or a
// second call; at its own replica the same retry completes the call.
func TestServeReplicaForeignRequestState(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	a, b := replicas(t, "session")
	modern := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "ask"}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	status, _, body := a.raw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask",`+meta+`}}`, modern...)
	is.Equal(status, http.StatusOK)
	is.True(strings.Contains(body, `"resultType":"input_required"`)) // body
	m := requestStateRe.FindStringSubmatch(body)
	is.True(m != nil)
	retry := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + m[1] + `",` + meta + `}}`

	status, _, body = b.raw(t, retry, modern...)
	is.Equal(status, http.StatusBadRequest)
	is.True(strings.Contains(body, `"code":-32602`))             // body
	is.True(strings.Contains(body, "issued by another replica")) // body

	status, _, body = a.raw(t, retry, modern...)
	is.Equal(status, http.StatusOK)
	is.True(strings.Contains(body, "hello Ada")) // body
}

// HTTP+SSE session ids name their replica too, and another replica
// answers a message to one with 404.
func TestServeReplicaSSESessionIDs(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	a, b := replicas(t)
	req, _ := http.NewRequest(http.MethodGet, a.ts.URL+DefaultSSEPath, nil)
	resp, err := a.client.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	ev, err := frame.NewSSEReader(resp.Body, 0).Next()
	is.NoErr(err)
	is.Equal(ev.Type, "endpoint")
	endpoint := string(ev.Data)
	is.True(strings.HasPrefix(endpoint, "/message?session=pod-a.")) // endpoint

	post := func(h *serveHarness) int {
		req, _ := http.NewRequest(http.MethodPost, h.ts.URL+endpoint, strings.NewReader(serveInitBody))
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.client.Do(req)
		is.NoErr(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	is.Equal(post(b), http.StatusNotFound) // the wrong replica
	is.Equal(post(a), http.StatusAccepted) // its own
}
