//go:build linux

package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// nodeMissingScript is what Node.js writes on stderr, and how it exits,
// when the script it is given does not exist.
const nodeMissingScript = `printf '%s\n' 'node:internal/modules/cjs/loader:1228' '  throw err;' '  ^' '' "Error: Cannot find module '/missing.js'" '    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)' "  code: 'MODULE_NOT_FOUND'," '}' '' 'Node.js v20.20.2' >&2; exit 1`

// errorMessage returns the JSON-RPC error message in body: a JSON
// response, or the first error event of an event stream.
func errorMessage(t *testing.T, body string) string {
	t.Helper()
	for line := range strings.Lines(body) {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var m struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Error.Message != "" {
			return m.Error.Message
		}
	}
	t.Fatalf("no error in %q", body)
	return ""
}

// A child that exits during the handshake is reported with the lines of
// its stderr that explain it — the error and what surrounds it, not just
// its last line — and advice for a cause serve recognises, to a client of
// either era and in the log; readiness says it on one line, without the
// stderr.
func TestServeFailedStartSaysWhy(t *testing.T) {
	checkServeLeaks(t)
	wantStderr := "the server process exited during its handshake (exit status 1). Its stderr:\n" +
		"throw err;\n^\nError: Cannot find module '/missing.js'\n" +
		"at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n" +
		"code: 'MODULE_NOT_FOUND',\n}\nNode.js v20.20.2\n" +
		"Likely cause: a module or script the server loads is missing"

	t.Run("2026-07-28", func(t *testing.T) {
		is := is.New(t)
		h := newServeHarness(t, func(cfg *ServeConfig) { cfg.Command = []string{"/bin/sh", "-c", nodeMissingScript} })
		status, _, body := h.rawDo(t, "POST", "/mcp", modernCall("1", "echo"),
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
		is.Equal(status, 502)
		msg := errorMessage(t, body)
		is.True(strings.HasPrefix(msg, "the server could not start: "+wantStderr))
		logs := h.stderr.String()
		is.True(strings.Contains(logs, `msg="a server process could not start" err="the server process exited during its handshake (exit status 1). Its stderr:\nthrow err;\n^\nError: Cannot find module`))
		is.True(strings.Contains(logs, `msg="server process exited with an error"`))
		is.True(strings.Contains(logs, `stderr="throw err;\n^\nError: Cannot find module '/missing.js'`))
		is.Equal(h.srv.Ready().Error(), "the last start of the server command failed: the server process exited during its handshake (exit status 1); likely cause: a module or script the server loads is missing: check the path after -- (relative paths are taken from serve's working directory) and install the server's dependencies")
	})

	t.Run("session era", func(t *testing.T) {
		is := is.New(t)
		h := newServeHarness(t, func(cfg *ServeConfig) { cfg.Command = []string{"/bin/sh", "-c", nodeMissingScript} })
		_, _, body := h.raw(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		msg := errorMessage(t, body)
		is.True(strings.Contains(msg, "Error: Cannot find module '/missing.js'"))
		is.True(strings.Contains(msg, "Node.js v20.20.2\nLikely cause: a module or script the server loads is missing"))
		is.Equal(h.srv.Sessions(), 0)
	})
}

// The children never get serve's own variables: its secrets, and the
// parent id by which the launcher asks serve (not them) to end with it.
func TestChildEnvDropsServesOwnVariables(t *testing.T) {
	is := is.New(t)
	got := childEnv([]string{"PATH=/bin", ServeTokenEnv + "=t", StateKeyEnv + "=k", ParentPIDEnv + "=42", "HOME=/h"})
	is.Equal(got, []string{"PATH=/bin", "HOME=/h"})
}
