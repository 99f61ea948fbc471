// Package conformancereport is the record of one run of the official MCP
// conformance suite against mcp-stdio: the conformance test
// (cmd/mcp-stdio/conformance_test.go) fills a [Summary] and writes it as
// JSON when MCP_STDIO_CONFORMANCE_OUT names a file, and [Render] turns that
// JSON into CONFORMANCE.md (see .ci/conformance, which runs both).
package conformancereport

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// OutEnv names the environment variable holding the path the conformance
// test writes its [Summary] to.
const OutEnv = "MCP_STDIO_CONFORMANCE_OUT"

// Summary is one run of the suite against both directions of mcp-stdio.
type Summary struct {
	// Suite is the npm package and version of the suite, e.g.
	// "@modelcontextprotocol/conformance@0.2.0-alpha.11".
	Suite string `json:"suite"`
	// Node is the version of the Node.js runtime that ran the suite.
	Node string `json:"node"`
	// Fixture is the stdio server published in server mode, as
	// "module/path@version".
	Fixture string `json:"fixture"`
	// Go is the Go toolchain that built mcp-stdio.
	Go string `json:"go"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
	// Date is the day of the run, YYYY-MM-DD in UTC.
	Date string `json:"date"`
	// Seconds is the wall time of the whole test.
	Seconds float64 `json:"seconds"`
	// Install lists the commands that installed the suite.
	Install []string `json:"install"`
	// Server is mcp-stdio serve under the suite's server scenarios.
	Server Mode `json:"server"`
	// ServerModern is mcp-stdio serve under the suite's server scenarios
	// at 2026-07-28, once per kind of child.
	ServerModern []ChildRun `json:"serverModern,omitempty"`
	// Client is the relay (mcp-stdio --oauth) under the suite's client
	// authorization scenarios.
	Client Mode `json:"client"`
	// Relay is the relay without OAuth (mcp-stdio URL) under the suite's
	// other client scenarios that apply to a relay.
	Relay Mode `json:"relay"`
}

// Mode is the result of one side of mcp-stdio under the suite.
type Mode struct {
	// Commands are the exact commands run, with temporary paths replaced
	// by short names.
	Commands []string `json:"commands"`
	// Error says why the mode did not run to completion; empty when it did.
	Error string `json:"error,omitempty"`
	// Notes are results of the test's own checks around the suite, such
	// as serve's shutdown.
	Notes []string `json:"notes,omitempty"`
	// Scenarios are the results, in the order they are reported.
	Scenarios []Scenario `json:"scenarios"`
}

// ChildRun is serve under the server scenarios at 2026-07-28 with one
// kind of stdio child.
type ChildRun struct {
	// Child names the kind of child: "dual-era", "session-era" or
	// "session-era-filtered".
	Child string `json:"child"`
	// Fixture is the child, as "module/path@version".
	Fixture string `json:"fixture"`
	// Why says what the run shows.
	Why string `json:"why,omitempty"`
	// Skipped says why the run did not happen; empty when it ran.
	Skipped string `json:"skipped,omitempty"`
	// CannotPass are the scored scenarios that cannot pass with this
	// child by construction: run and recorded as not scored, with
	// [CannotPassNote] and the reason as their notes.
	CannotPass []Excused `json:"cannotPass,omitempty"`
	Mode
}

// Excused is a scenario that cannot pass with a child, and why.
type Excused struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Scenario is the result of one scenario at one spec version.
type Scenario struct {
	// Name is the suite's scenario name, e.g. "auth/scope-step-up".
	Name string `json:"name"`
	// Spec is the spec version the scenario ran at.
	Spec string `json:"spec"`
	// Scored is true when the scenario counts toward the goal (every
	// scored scenario passes); unscored ones are run and recorded only.
	Scored bool `json:"scored"`
	// Forced is true when the scenario ran (with the suite's --force) at a
	// spec version it does not list.
	Forced bool `json:"forced,omitempty"`
	// Passed reports whether the suite judged the scenario a pass.
	Passed bool `json:"passed"`
	// Success, Failure and Warning count the suite's checks by status.
	Success int `json:"success"`
	Failure int `json:"failure"`
	Warning int `json:"warning"`
	// Seconds is the wall time of the scenario, 0 when not measured
	// separately.
	Seconds float64 `json:"seconds,omitempty"`
	// Notes say why it is unscored, or which checks failed or warned.
	Notes string `json:"notes,omitempty"`
}

// Tally counts the scenarios of a mode that match scored, and how many of
// them passed.
func (m Mode) Tally(scored bool) (passed, total int) {
	for _, s := range m.Scenarios {
		if s.Scored != scored {
			continue
		}
		total++
		if s.Passed {
			passed++
		}
	}
	return passed, total
}

// Warned returns the names of a mode's scenarios, scored or not, with a
// check the suite reported as a warning, in order.
func (m Mode) Warned() []string {
	var names []string
	for _, s := range m.Scenarios {
		if s.Warning > 0 {
			names = append(names, s.Name)
		}
	}
	return names
}

// Read reads a Summary written as JSON.
func Read(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Write writes s as indented JSON to path.
func (s *Summary) Write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Cited comparison figures, from docs/interop-testing (measured with the
// same suite and the same go-sdk v1.8.0 fixture as the stdio child, at
// 2025-11-25, scored scenarios only).
var citedPeers = []struct{ name, score, note string }{
	{"supergateway 4.0.0 `--stateful`", "29/30", "fails `dns-rebinding-protection`"},
	{"mcp-proxy 6.7.19", "24/30", "fails `dns-rebinding-protection` among others"},
}

// warnings says which scenarios of m, scored or not, have warnings.
func warnings(m Mode) string {
	names := m.Warned()
	if len(names) == 0 {
		return "no warnings"
	}
	return fmt.Sprintf("warnings in %d (`%s`)", len(names), strings.Join(names, "`, `"))
}

// Render writes s as the Markdown of CONFORMANCE.md.
func Render(w io.Writer, s *Summary) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# Conformance\n\n")
	p("mcp-stdio measured with the official MCP conformance suite. This file is generated by\n")
	p("`.ci/conformance` from the results of `go test ./cmd/mcp-stdio -run Conformance`; do not edit it\n")
	p("by hand, run the script again.\n\n")

	sp, st := s.Server.Tally(true)
	cp, ct := s.Client.Tally(true)
	ip, it := s.Client.Tally(false)
	rp, rt := s.Relay.Tally(true)
	p("| | |\n|---|---|\n")
	p("| Run on | %s (%s, %s, %.0f s for the whole test) |\n", s.Date, s.Platform, s.Go, s.Seconds)
	p("| Suite | `%s` on Node.js %s |\n", s.Suite, s.Node)
	p("| Server fixture | `%s` (the stdio child behind `mcp-stdio serve`) |\n", s.Fixture)
	p("| **Server mode** (`mcp-stdio serve`) | **%d/%d** scored scenarios pass at 2025-11-25; %s |\n", sp, st, warnings(s.Server))
	for _, r := range s.ServerModern {
		p("| **Server mode at 2026-07-28**, %s child | %s |\n", r.Child, modernSummary(r))
	}
	p("| **Client mode** (relay, `mcp-stdio URL`) | **%d/%d** required scenarios pass (2025-11-25; 2026-07-28 as a 2026-07-28 and as a session-era host)%s |\n", rp, rt, notRequired(s.Relay))
	p("| **Client mode** (relay, `mcp-stdio --oauth`) | **%d/%d** required authorization scenarios pass (2025-11-25, else 2025-03-26; 2026-07-28 as either host) |\n", cp, ct)
	fp, ft := 0, 0
	for _, sc := range s.Client.Scenarios {
		if !sc.Scored && sc.Forced {
			ft++
			if sc.Passed {
				fp++
			}
		}
	}
	p("| Authorization, not required | %d/%d 2026-07-28-only scenarios forced at the 2025-11-25 wire pass; %d/%d others |\n\n", fp, ft, ip-fp, it-ft)

	p("The test fails unless every scored server scenario passes, no server scenario (scored or not)\n")
	p("has a warning at 2025-11-25 (at 2026-07-28 warnings are recorded, and a scenario excused as one that\n")
	p("cannot pass with a child must fail), and every required client scenario passes.\n")
	p("Re-run and regenerate this file with:\n\n```sh\n.ci/conformance\n```\n\n")
	p("Install (cached under the user cache directory, `mcp-stdio/conformance-<version>`):\n\n```sh\n")
	for _, c := range s.Install {
		p("%s\n", c)
	}
	p("```\n\n")

	p("## Server mode: `mcp-stdio serve`\n\n")
	p("The suite speaks Streamable HTTP to `mcp-stdio serve`, which runs the go-sdk conformance server as\n")
	p("its stdio child (one child per session). After the run the test opens one more session, stops\n")
	p("serve with SIGTERM and checks that it exits 0 and leaves no child process behind.\n\n")
	renderMode(p, s.Server, "Scored", "Not scored (run and reported by the suite)")

	if len(s.ServerModern) > 0 {
		renderModern(p, s.ServerModern)
	}

	p("## Client mode: the relay (`mcp-stdio URL`)\n\n")
	p("For each client scenario that applies to a relay the suite starts its own MCP server and runs the\n")
	p("test binary as the MCP client: a go-sdk client that spawns `mcp-stdio <url>` and talks MCP to it\n")
	p("over stdio, doing what the scenario's server waits for. At 2025-11-25:\n\n")
	p("- `initialize`: the handshake; the client checks that the answer has the version it asked for;\n")
	p("- `tools_call`: lists the tools and calls `add_numbers`, checking the sum in the answer;\n")
	p("- `elicitation-sep1034-client-defaults`: calls the tool whose server elicits a form during the call,\n")
	p("  and accepts the form with its defaults (SEP-1034) through the relay while the call is open;\n")
	p("- `sse-retry`: calls the tool whose server ends the call's event stream with a `retry:` interval\n")
	p("  and answers only on the stream the client opens again after it (SEP-1699);\n")
	p("- `json-schema-2020-12-preservation`: lists the tools and sends one tool's JSON Schema 2020-12\n")
	p("  `inputSchema` back through an echo tool as the exact bytes the relay printed, and checks them\n")
	p("  against the server's own `tools/list` answer fetched without the relay (byte for byte).\n\n")
	p("At 2026-07-28 each scenario runs twice: with the client as a 2026-07-28 host (it sends\n")
	p("`server/discover`; the relay passes its lines through) and as a session-era host (it sends\n")
	p("`initialize` at 2025-11-25; the relay answers it and bridges every request to the 2026-07-28\n")
	p("server), marked \"(session-era host)\":\n\n")
	p("- `tools_call`, `json-schema-2020-12-preservation`: as above;\n")
	p("- `request-metadata`, `json-schema-ref-no-deref`: list the tools (the server judges `_meta`, the\n")
	p("  `MCP-Protocol-Version` header and the retry after a -32022 refusal);\n")
	p("- `http-standard-headers`: every list, and a call, read or get of every tool, resource and prompt\n")
	p("  (the server judges `Mcp-Method` and `Mcp-Name`);\n")
	p("- `http-custom-headers`: calls the tools the scenario context names with its arguments (the server\n")
	p("  judges the `Mcp-Param-*` headers mirrored from `x-mcp-header` annotations);\n")
	p("- `http-invalid-tool-headers`: lists the tools and calls every one listed (the tools with an\n")
	p("  invalid `x-mcp-header` must not be called, the valid one must);\n")
	p("- `sep-2322-client-request-state`: calls the four MRTR tools (an `input_required` result with and\n")
	p("  without `requestState`, a call in between, a result without `resultType`); as a session-era host\n")
	p("  the client answers the `elicitation/create` the relay's MRTR bridge sends it.\n\n")
	p("The suite (this version) has no client scenario for `subscriptions/listen`, caching or\n")
	p("cancellation.\n\n")
	renderMode(p, s.Relay, "Required", "Not required (informational)")

	p("## Client mode: the relay's OAuth (`mcp-stdio --oauth`)\n\n")
	p("For each authorization scenario the suite starts its own authorization server and MCP server and\n")
	p("runs the test binary as the MCP client: a go-sdk client that spawns `mcp-stdio --oauth … <url>`\n")
	p("and talks MCP to it over stdio (initialize, tools/list, tools/call `test-tool`), answering -32002\n")
	p("(sign-in under way) by retrying shortly after. Each run gets a fresh token store\n")
	p("(`XDG_CONFIG_HOME`), and `$BROWSER` is the test binary acting as a browser that follows the\n")
	p("authorization redirect. Pre-registered credentials from the scenario context become\n")
	p("`--client-id`/`--client-secret`; `auth/basic-cimd` gets `--client-metadata-url`.\n")
	p("Each scenario runs at 2025-11-25 (else 2025-03-26), and at 2026-07-28 where the suite lists it,\n")
	p("there with the client as a 2026-07-28 host and as a session-era host (the relay probes the\n")
	p("server's era after signing in). The 2026-07-28-only scenarios also run forced (`--force`) at the\n")
	p("2025-11-25 wire, recorded only, so that the relay's authorization logic is measured apart from\n")
	p("the wire.\n\n")
	renderMode(p, s.Client, "Required", "Not required (recorded; forced at 2025-11-25)")

	p("## For comparison (cited, not measured by this test)\n\n")
	p("Other gateways with the same suite and the same go-sdk v1.8.0 conformance server as their stdio\n")
	p("child, server mode at 2025-11-25 (scored scenarios):\n\n")
	p("| Gateway | Scored | Note |\n|---|---|---|\n")
	p("| mcp-stdio serve (this run) | %d/%d | |\n", sp, st)
	for _, c := range citedPeers {
		p("| %s | %s | %s |\n", c.name, c.score, c.note)
	}
	p("\nEvery one of the other gateways fails `dns-rebinding-protection`; mcp-stdio serve checks the\n")
	p("Host and Origin headers of every request on a loopback listener.\n")

	_, err := io.WriteString(w, b.String())
	return err
}

// modernSummary is a 2026-07-28 run's line in the table at the top.
func modernSummary(r ChildRun) string {
	if r.Skipped != "" {
		return "not run: " + cell(r.Skipped)
	}
	sp, st := r.Tally(true)
	res := fmt.Sprintf("**%d/%d** scored scenarios pass; %s", sp, st, warnings(r.Mode))
	if n := len(r.CannotPass); n > 0 {
		res += fmt.Sprintf("; %d cannot pass with this child (see below)", n)
	}
	return res
}

// CannotPassNote starts the notes of a scored scenario that is recorded
// as not scored because it cannot pass with the run's child by
// construction; the reason follows it.
const CannotPassNote = "cannot pass with this child: "

// renderModern writes the section of the 2026-07-28 server runs.
func renderModern(p func(string, ...any), runs []ChildRun) {
	p("## Server mode at 2026-07-28: `mcp-stdio serve` with a pooled child\n\n")
	p("The suite speaks 2026-07-28 (no session; `_meta` and the routing headers on every request) to\n")
	p("`mcp-stdio serve`, which serves each principal from a pooled stdio child. It runs once per child\n")
	p("below: a dual-era one, whose 2026-07-28 requests pass through, and session-era ones, which serve\n")
	p("translates. After each run the test stops serve with SIGTERM and checks that it exits 0 and leaves\n")
	p("no child process behind.\n\n")
	for _, r := range runs {
		p("### %s child: `%s`\n\n", r.Child, r.Fixture)
		if r.Why != "" {
			p("%s.\n\n", strings.TrimSuffix(r.Why, "."))
		}
		if r.Skipped != "" {
			p("**Not run:** %s\n\n", cell(r.Skipped))
		}
		if len(r.CannotPass) > 0 {
			p("Scenarios that cannot pass with this child by construction (run and recorded, not scored):\n\n")
			for _, e := range r.CannotPass {
				p("- `%s`: %s\n", e.Name, cell(e.Why))
			}
			p("\n")
		}
		if r.Skipped != "" && len(r.Scenarios) == 0 {
			if len(r.Commands) > 0 {
				p("Commands:\n\n```sh\n")
				for _, c := range r.Commands {
					p("%s\n", c)
				}
				p("```\n\n")
			}
			continue
		}
		renderMode(p, r.Mode, "Scored", "Not scored (run and reported by the suite, or excused above)")
	}
}

// notRequired names a mode's unscored scenarios with how many pass, as
// "; not required: 0/1 (`sse-retry`)", or "" when it has none.
func notRequired(m Mode) string {
	passed, total := m.Tally(false)
	if total == 0 {
		return ""
	}
	var names []string
	for _, s := range m.Scenarios {
		if !s.Scored {
			names = append(names, "`"+s.Name+"`")
		}
	}
	return fmt.Sprintf("; not required: %d/%d pass (%s)", passed, total, strings.Join(names, ", "))
}

// renderMode writes a mode's commands and one table per group.
func renderMode(p func(string, ...any), m Mode, scoredTitle, otherTitle string) {
	if m.Error != "" {
		p("**The run did not complete:** %s\n\n", cell(m.Error))
	}
	p("Commands:\n\n```sh\n")
	for _, c := range m.Commands {
		p("%s\n", c)
	}
	p("```\n\n")
	for _, n := range m.Notes {
		p("- %s\n", n)
	}
	if len(m.Notes) > 0 {
		p("\n")
	}
	for _, g := range []struct {
		scored bool
		title  string
	}{{true, scoredTitle}, {false, otherTitle}} {
		passed, total := m.Tally(g.scored)
		if total == 0 {
			continue
		}
		p("### %s: %d/%d pass\n\n", g.title, passed, total)
		p("| Scenario | Spec | Result | Checks (ok/fail/warn) | Notes |\n|---|---|---|---|---|\n")
		rows := slices.Clone(m.Scenarios)
		slices.SortStableFunc(rows, func(a, b Scenario) int {
			if c := strings.Compare(b.Spec, a.Spec); c != 0 {
				return c
			}
			return 0
		})
		for _, s := range rows {
			if s.Scored != g.scored {
				continue
			}
			result := "pass"
			if !s.Passed {
				result = "**FAIL**"
			}
			spec := s.Spec
			if s.Forced {
				spec += " (forced)"
			}
			p("| `%s` | %s | %s | %d/%d/%d | %s |\n", s.Name, spec, result, s.Success, s.Failure, s.Warning, cell(s.Notes))
		}
		p("\n")
	}
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r", "")
	return strings.ReplaceAll(s, "\n", "<br>")
}
