package conformancereport_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sample() *conformancereport.Summary {
	return &conformancereport.Summary{
		Suite: "@modelcontextprotocol/conformance@0.2.0-alpha.11", Node: "v22.0.0",
		Fixture: "example.com/fixture@v1.0.0", Go: "go1.26.0", Platform: "linux/amd64", Date: "2026-01-02", Seconds: 42,
		Install: []string{"npm install suite"},
		Server: conformancereport.Mode{
			Commands: []string{"mcp-stdio serve -- ./fixture"},
			Notes:    []string{"serve exited 0"},
			Scenarios: []conformancereport.Scenario{
				{Name: "ping", Spec: "2025-11-25", Scored: true, Passed: true, Success: 2},
				{Name: "dns-rebinding-protection", Spec: "2025-11-25", Scored: true, Passed: false, Failure: 1, Notes: "FAILURE `x`: a|b\nsecond line"},
				{Name: "server-sse-polling", Spec: "2025-11-25", Passed: true, Warning: 2, Notes: "not scored: pending"},
			},
		},
		ServerModern: []conformancereport.ChildRun{
			{Child: "dual-era", Fixture: "example.com/fixture@v1.0.0", Skipped: "gated: no face yet",
				Mode: conformancereport.Mode{Commands: []string{"mcp-stdio serve -- ./fixture"}}},
			{Child: "session-era", Fixture: "example.com/fixture@v0.9.0", Why: "an old build.",
				CannotPass: []conformancereport.Excused{{Name: "input-required-result-basic-sampling", Why: "no such tool"}},
				Mode: conformancereport.Mode{Scenarios: []conformancereport.Scenario{
					{Name: "tools-list", Spec: "2026-07-28", Scored: true, Passed: true, Success: 3},
					{Name: "input-required-result-basic-sampling", Spec: "2026-07-28", Failure: 1, Notes: conformancereport.CannotPassNote + "no such tool"},
				}}},
		},
		Client: conformancereport.Mode{
			Scenarios: []conformancereport.Scenario{
				{Name: "auth/metadata-default", Spec: "2025-11-25", Scored: true, Passed: true, Success: 13},
				{Name: "auth/iss-supported", Spec: "2026-07-28", Scored: true, Passed: true, Success: 13, Notes: "2026-07-28 only"},
				{Name: "auth/iss-supported", Spec: "2025-11-25", Forced: true, Passed: true, Success: 14},
			},
		},
		Relay: conformancereport.Mode{
			Commands: []string{"mcp-stdio --log-level debug URL"},
			Scenarios: []conformancereport.Scenario{
				{Name: "initialize", Spec: "2025-11-25", Scored: true, Passed: true, Success: 1},
				{Name: "tools_call", Spec: "2025-11-25", Scored: true, Passed: false, Failure: 1},
				{Name: "sse-retry", Spec: "2025-11-25", Passed: false, Success: 1, Failure: 1, Warning: 1, Notes: "not required: no resumption"},
			},
		},
	}
}

func TestRender(t *testing.T) {
	is := is.New(t)
	var b strings.Builder
	is.NoErr(conformancereport.Render(&b, sample()))
	md := b.String()
	for _, want := range []string{
		"**1/2** scored scenarios pass at 2025-11-25; warnings in 1 (`server-sse-polling`) |",
		"no server scenario (scored or not)\nhas a warning",
		"**2/2** required authorization scenarios pass",
		"| **Client mode** (relay, `mcp-stdio URL`) | **1/2** required scenarios pass (2025-11-25; 2026-07-28 as a 2026-07-28 and as a session-era host); not required: 0/1 pass (`sse-retry`) |",
		"### Required: 1/2 pass",
		"| `tools_call` | 2025-11-25 | **FAIL** | 0/1/0 |  |",
		"### Not required (informational): 0/1 pass",
		"| `sse-retry` | 2025-11-25 | **FAIL** | 1/1/1 | not required: no resumption |",
		"mcp-stdio --log-level debug URL\n",
		"| Authorization, not required | 1/1 2026-07-28-only scenarios forced at the 2025-11-25 wire pass; 0/0 others |",
		"| `auth/iss-supported` | 2025-11-25 (forced) | pass | 14/0/0 |  |",
		"### Scored: 1/2 pass",
		"### Not scored (run and reported by the suite): 1/1 pass",
		"| `dns-rebinding-protection` | 2025-11-25 | **FAIL** | 0/1/0 | FAILURE `x`: a\\|b<br>second line |",
		"- serve exited 0\n",
		"| mcp-stdio serve (this run) | 1/2 | |",
		"| supergateway 4.0.0 `--stateful` | 29/30 |",
		"| mcp-proxy 6.7.19 | 24/30 |",
		"npm install suite\n",
		"| **Server mode at 2026-07-28**, dual-era child | not run: gated: no face yet |",
		"| **Server mode at 2026-07-28**, session-era child | **1/1** scored scenarios pass; no warnings; 1 cannot pass with this child (see below) |",
		"### dual-era child: `example.com/fixture@v1.0.0`\n\n**Not run:** gated: no face yet\n\nCommands:\n\n```sh\nmcp-stdio serve -- ./fixture\n```\n",
		"### session-era child: `example.com/fixture@v0.9.0`\n\nan old build.\n\n",
		"- `input-required-result-basic-sampling`: no such tool\n",
		"| `input-required-result-basic-sampling` | 2026-07-28 | **FAIL** | 0/1/0 | cannot pass with this child: no such tool |",
	} {
		is.True(strings.Contains(md, want)) // the report lacks a line
		if !strings.Contains(md, want) {
			t.Logf("missing %q in:\n%s", want, md)
		}
	}
}

func TestWriteRead(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "summary.json")
	s := sample()
	is.NoErr(s.Write(path))
	got, err := conformancereport.Read(path)
	is.NoErr(err)
	is.Equal(got, s) // the summary survives JSON
	_, err = conformancereport.Read(filepath.Join(t.TempDir(), "missing.json"))
	is.True(err != nil) // a missing file is an error
}

func ExampleMode_Warned() {
	m := conformancereport.Mode{Scenarios: []conformancereport.Scenario{
		{Name: "ping", Scored: true, Passed: true, Success: 2},
		{Name: "server-sse-polling", Passed: true, Warning: 2},
	}}
	fmt.Println(m.Warned())
	// Output:
	// [server-sse-polling]
}

func ExampleMode_Tally() {
	m := conformancereport.Mode{Scenarios: []conformancereport.Scenario{
		{Name: "ping", Scored: true, Passed: true},
		{Name: "tools-list", Scored: true, Passed: false},
		{Name: "server-sse-polling", Scored: false, Passed: true},
	}}
	passed, total := m.Tally(true)
	fmt.Printf("scored: %d/%d\n", passed, total)
	passed, total = m.Tally(false)
	fmt.Printf("not scored: %d/%d\n", passed, total)
	// Output:
	// scored: 1/2
	// not scored: 1/1
}
