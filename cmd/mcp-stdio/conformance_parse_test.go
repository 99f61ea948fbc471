package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
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
