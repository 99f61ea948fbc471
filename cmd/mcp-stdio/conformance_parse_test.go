package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

// TestConformanceParsers checks how the conformance test reads the suite's
// output, on samples of what the pinned suite prints and writes.
func TestConformanceParsers(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		is := is.New(t)
		out := "Required for 2025-11-25 (48 scenarios, frozen; run at the 2025-11-25 wire):\n\n" +
			"Server scenarios (test against a server):\n  - server-initialize\n  - dns-rebinding-protection\n\n" +
			"Client scenarios (test against a client):\n  - auth/metadata-default [2025-11-25,2026-07-28]\n" +
			"  - auth/2025-03-26-oauth-endpoint-fallback [2025-03-26]\n  - auth/dpop [extension]\n\n" +
			"Run and reported, but never scored:\n  extension (6):\n    - auth/dpop [client]\n"
		got := confParseList([]byte(out))
		is.Equal(len(got["server"]), 2)
		is.Equal(got["server"][1].name, "dns-rebinding-protection")
		is.Equal(len(got["client"]), 3)
		is.Equal(got["client"][0].versions, []string{"2025-11-25", "2026-07-28"})
		is.Equal(got["client"][2].versions, []string{"extension"})
	})
	t.Run("runs", func(t *testing.T) {
		is := is.New(t)
		out := "Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n  - tools_call [2025-06-18,2025-11-25,2026-07-28]\n" +
			"  - elicitation-sep1034-client-defaults [2025-11-25]\n  - sse-retry [2025-11-25]\n  - request-metadata [2026-07-28]\n" +
			"  - auth/metadata-default [2025-11-25,2026-07-28]\n  - auth/iss-supported [2026-07-28]\n  - auth/dpop [extension]\n" +
			"  - json-schema-2020-12-preservation [2025-11-25,2026-07-28]\n" +
			"  - http-standard-headers [2026-07-28]\n  - json-schema-ref-no-deref [2026-07-28]\n" +
			"  - http-custom-headers [2026-07-28]\n  - http-invalid-tool-headers [2026-07-28]\n  - sep-2322-client-request-state [2026-07-28]\n"
		listed := confParseList([]byte(out))["client"]
		runs, err := confRelayRuns(listed)
		is.NoErr(err)
		is.Equal(len(runs), len(confRelayScenarios)+2*len(confModernRelayScenarios))
		var required, modern []string
		for _, r := range runs {
			is.Equal(r.note != "", !r.required) // one not required says why
			if r.spec == "2026-07-28" {
				modern = append(modern, r.label())
				continue
			}
			is.Equal(r.spec, "2025-11-25")
			if r.required {
				required = append(required, r.name)
			}
		}
		is.Equal(required, []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry", "json-schema-2020-12-preservation"})
		is.Equal(modern[:2], []string{"tools_call", "tools_call (session-era host)"}) // as either host
		_, err = confRelayRuns(listed[1:])
		is.True(err != nil) // a relay scenario the suite does not list is an error
		_, err = confRelayRuns(confParseList([]byte(strings.Replace(out, "sse-retry [2025-11-25]", "sse-retry [2026-07-28]", 1)))["client"])
		is.True(err != nil) // so is one it does not list at 2025-11-25

		runs, err = confAuthRuns(listed)
		is.NoErr(err)
		is.Equal(runs, []confClientRun{
			{name: "auth/metadata-default", spec: "2025-11-25", required: true},
			// at 2026-07-28 too, as a 2026-07-28 host and as a session-era host
			{name: "auth/metadata-default", spec: "2026-07-28", required: true},
			{name: "auth/metadata-default", spec: "2026-07-28", required: true, sessionEraHost: true},
			{name: "auth/iss-supported", spec: "2026-07-28", required: true, note: "2026-07-28 only"},
			{name: "auth/iss-supported", spec: "2026-07-28", required: true, note: "2026-07-28 only", sessionEraHost: true},
			// and recorded, forced at the 2025-11-25 wire
			{name: "auth/iss-supported", spec: "2025-11-25", forced: true, note: "2026-07-28 only; forced at the 2025-11-25 wire"},
		})
		_, err = confAuthRuns(listed[:1])
		is.True(err != nil) // no required auth scenario is an error

		// SEP-2352 (issue 23): required at 2026-07-28 as either host,
		// played by a host that does not retry -32002.
		runs, err = confAuthRuns(confParseList([]byte("Client scenarios (test against a client):\n  - auth/authorization-server-migration [2026-07-28]\n"))["client"])
		is.NoErr(err)
		is.Equal(len(runs), 3)
		is.True(runs[0].required && !runs[0].sessionEraHost && runs[0].spec == "2026-07-28")
		is.True(runs[1].required && runs[1].sessionEraHost && runs[1].spec == "2026-07-28")
		is.True(runs[2].forced && !runs[2].required)
		_, noRetry := confNoRetry["auth/authorization-server-migration"]
		is.True(noRetry)
		tries := 0
		err = confRetry(context.Background(), io.Discard, "tools/list", 1, func() error {
			tries++
			return &jsonrpc.Error{Code: frame.CodeReauthorizing, Message: "sign-in started"}
		})
		is.True(err != nil)
		is.Equal(tries, 1) // answered -32002 once, and given up on, as such a host does
	})
	t.Run("unscored reasons", func(t *testing.T) {
		is := is.New(t)
		out := "Total: 81 passed, 0 failed\n\nNot scored for 2025-11-25: 2 scenario(s) run, 0 failing. These do not affect conformance.\n" +
			"  ✓ server-session-lifecycle (added-after-release)\n  ✗ server-sse-polling (pending)\n"
		is.Equal(confUnscoredReasons(out), map[string]string{"server-session-lifecycle": "added-after-release", "server-sse-polling": "pending"})
		is.Equal(len(confUnscoredReasons("no such section")), 0)
	})
	t.Run("results", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		write := func(rel, body string) {
			p := filepath.Join(dir, rel, "checks.json")
			is.NoErr(os.MkdirAll(filepath.Dir(p), 0o755))
			is.NoErr(os.WriteFile(p, []byte(body), 0o644))
		}
		write("server-tools-call-error-2026-11-30T19-43-30-091Z",
			`[{"id":"a","status":"SUCCESS"},{"id":"b","status":"FAILURE","errorMessage":"boom"},{"id":"c","status":"WARNING","description":"meh"},{"id":"d","status":"INFO"}]`)
		write("auth/scope-step-up-2026-11-30T19-43-30-091Z", `[]`)
		got, err := confReadResults(dir, "server-")
		is.NoErr(err)
		is.Equal(len(got), 2)
		is.Equal(len(got["auth/scope-step-up"]), 0)
		s := conformancereport.Scenario{Notes: "first"}
		confScore(&s, got["tools-call-error"])
		is.Equal([]int{s.Success, s.Failure, s.Warning}, []int{1, 1, 1})
		is.Equal(s.Notes, "first\nFAILURE `b`: boom\nWARNING `c`: meh")

		write("broken-2026-11-30T19-43-30-091Z", `{`)
		_, err = confReadResults(dir, "")
		is.True(err != nil) // a broken checks.json is reported
	})
}

// TestConformanceClientHelpers checks the helpers of the client program's
// plays (conformance_plays_test.go) on local peers.
func TestConformanceClientHelpers(t *testing.T) {
	t.Run("direct result", func(t *testing.T) {
		is := is.New(t)
		const result = `{"tools":[{"name":"other","inputSchema":{}},{"name":"t","inputSchema":{"b":1, "a":[2.50],"$defs":{}}}]}`
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			is.Equal(r.Header.Get("MCP-Protocol-Version"), "2025-11-25")
			is.Equal(r.Header.Get("Accept"), "application/json, text/event-stream")
			body, _ := io.ReadAll(r.Body)
			is.Equal(gjson.GetBytes(body, "method").String(), "tools/list")
			msg := `{"jsonrpc":"2.0","id":1,"result":` + result + `}`
			if calls.Add(1) == 1 { // an event stream: priming event, a notification, the answer
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "id: 1\nretry: 500\ndata: \n\n", `data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}`+"\n\n", "data: "+msg+"\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, msg)
		}))
		defer srv.Close()
		for range 2 {
			got, err := confDirectResult(context.Background(), srv.URL, "2025-11-25", "tools/list")
			is.NoErr(err)
			is.Equal(string(got), result) // the result's bytes, as served
			schema, err := confInputSchema(got, "t")
			is.NoErr(err)
			is.Equal(string(schema), `{"b":1, "a":[2.50],"$defs":{}}`) // byte for byte
		}
		_, err := confInputSchema([]byte(result), "missing")
		is.True(err != nil) // an unlisted tool is an error
	})
	t.Run("accept defaults", func(t *testing.T) {
		is := is.New(t)
		var c confClient
		res, err := c.acceptDefaults(context.Background(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string", "default": "Ann"},
				"n":    map[string]any{"type": "integer", "default": 3.0},
				"free": map[string]any{"type": "string"},
			}},
		}})
		is.NoErr(err)
		is.Equal(res.Action, "accept")
		is.Equal(res.Content, map[string]any{"name": "Ann", "n": 3.0}) // the defaults, and nothing for a field without one
		is.Equal(c.elicited.Load(), int32(1))
	})
	t.Run("wire", func(t *testing.T) {
		is := is.New(t)
		ctx := context.Background()
		server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		server.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		is.NoErr(err)
		defer ss.Close()
		var w confWire
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, w.wrap(ct), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		is.NoErr(err)
		defer cs.Close()
		is.Equal(w.result("tools/list"), nil) // nothing before the call
		_, err = cs.ListTools(ctx, nil)
		is.NoErr(err)
		is.Equal(gjson.GetBytes(w.result("tools/list"), "tools.0.name").String(), "t")             // the raw result is kept
		is.Equal(gjson.GetBytes(w.result("initialize"), "protocolVersion").String(), "2025-11-25") // per method
	})
}
