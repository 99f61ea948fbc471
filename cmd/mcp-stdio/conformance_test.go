package main_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
)

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned) against both directions of
// mcp-stdio:
//
//   - server mode: the suite's server scenarios at 2025-11-25 against
//     mcp-stdio serve publishing the go-sdk conformance server (a stdio
//     child); every scored scenario must pass, dns-rebinding-protection
//     included, no server scenario (scored or not) may have a warning,
//     and serve must stop cleanly on SIGTERM;
//   - server mode at 2026-07-28 (confModernServerRuns): the same against
//     serve with a dual-era child (the same fixture) and with two
//     session-era ones (the fixture of an older go-sdk, and the same
//     fixture behind a filter that hides its 2026-07-28, see
//     conformance_filter_test.go); every scored scenario must pass unless
//     the run's failing map says why it cannot with that child, an
//     excused scenario must still fail (else its excuse is stale), and
//     serve must stop cleanly; warnings are recorded;
//   - client mode, relay: the suite's client scenarios that apply to a
//     relay (confRelayScenarios) at 2025-11-25 against the relay without
//     OAuth (mcp-stdio URL), driven by a go-sdk client over stdio (the test
//     binary itself, see conformance_client_test.go and
//     conformance_plays_test.go); the required ones must pass;
//   - client mode, authorization: the suite's authorization scenarios
//     against the relay (mcp-stdio --oauth), driven the same way; every
//     scenario must pass at 2025-11-25 (else 2025-03-26) and at 2026-07-28
//     as either host where it applies, unless confAuthModernFailing says
//     why not; the 2026-07-28-only ones are also run, and recorded, forced
//     at the 2025-11-25 wire.
//
// The suite and Node.js 22 are installed with npm into the user cache
// directory once. Skipped under -short and with MCP_STDIO_SKIP_CONFORMANCE=1.
// With MCP_STDIO_CONFORMANCE_OUT=FILE the results are written to FILE as
// JSON (see .ci/conformance, which turns them into CONFORMANCE.md).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the official conformance suite (Node.js, npm)")
	}
	if os.Getenv(confSkipEnv) == "1" {
		t.Skipf("%s=1", confSkipEnv)
	}
	start := time.Now()
	suite := confInstall(t)
	bins := confBuild(t)

	ctx, cancel := context.WithTimeout(context.Background(), confTestTimeout)
	t.Cleanup(cancel) // the parallel subtests run after this function returns
	node, err := suite.nodeVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := &conformancereport.Summary{
		Suite:    confSuitePackage,
		Node:     node,
		Fixture:  confFixturePackage + "@" + bins.fixture.version,
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Date:     start.UTC().Format(time.DateOnly),
		Install:  suite.install,
	}
	if out := os.Getenv(conformancereport.OutEnv); out != "" {
		// Cleanups run after the parallel subtests are done.
		t.Cleanup(func() {
			sum.Seconds = time.Since(start).Round(time.Second).Seconds()
			if err := sum.Write(out); err != nil {
				t.Errorf("writing the summary: %v", err)
			}
		})
	}
	t.Run("server", func(t *testing.T) {
		t.Parallel()
		// One server run at a time: they share the 2 cores with the
		// client modes.
		t.Run(confServerSpec, func(t *testing.T) {
			confServerMode(t, ctx, suite, bins, confServerTarget{spec: confServerSpec, fixture: bins.fixture}, &sum.Server)
		})
		sum.ServerModern = make([]conformancereport.ChildRun, len(confModernServerRuns))
		for i, r := range confModernServerRuns {
			run := &sum.ServerModern[i]
			fx := r.fixture(bins)
			*run = conformancereport.ChildRun{Child: r.child, Fixture: confFixturePackage + "@" + fx.version, Why: r.why}
			for _, name := range slices.Sorted(maps.Keys(r.failing)) {
				run.CannotPass = append(run.CannotPass, conformancereport.Excused{Name: name, Why: r.failing[name]})
			}
			t.Run(confModernSpec+"/"+r.child, func(t *testing.T) {
				confServerMode(t, ctx, suite, bins, confServerTarget{spec: confModernSpec, fixture: fx, failing: r.failing}, &run.Mode)
			})
		}
	})
	// The client modes share the bound on scenarios running at once.
	sem := make(chan struct{}, confParallel)
	t.Run("client-relay", func(t *testing.T) {
		t.Parallel()
		confRelayMode(t, ctx, suite, bins, sem, &sum.Relay)
	})
	t.Run("client-auth", func(t *testing.T) {
		t.Parallel()
		confAuthMode(t, ctx, suite, bins, sem, &sum.Client)
	})
}

// Test settings.
const (
	// confTestTimeout bounds the whole test: about 4 minutes on an idle
	// 2-core machine, more than twice that on a loaded one (under
	// .ci/conformance's go test -timeout of 20 minutes).
	confTestTimeout = 15 * time.Minute
	// confServerRunTimeout bounds the suite's server run.
	confServerRunTimeout = 4 * time.Minute
	// confServerSpec is the revision server mode is scored against.
	confServerSpec = "2025-11-25"
	// confServeExit bounds serve's shutdown after SIGTERM.
	confServeExit = 30 * time.Second
	// confClientTimeout is the suite's timeout for one client run, and
	// confScenarioTimeout bounds one scenario as a whole.
	confClientTimeout   = 60 * time.Second
	confScenarioTimeout = 2 * time.Minute
	// confParallel is how many client scenarios run at once, across both
	// client modes.
	confParallel = 3
	// The server fixture.
	confGoSDKModule    = "github.com/modelcontextprotocol/go-sdk"
	confFixturePackage = confGoSDKModule + "/conformance/everything-server"
)

// confBins are the programs under test.
type confBins struct {
	relay string // mcp-stdio
	// fixture is the go-sdk conformance server (dual-era), sessionEraFixture
	// the same server of a go-sdk that predates 2026-07-28.
	fixture, sessionEraFixture confFixture
	self                       string // this test binary (client and browser programs)
	names                      *strings.Replacer
}

// confFixture is a built conformance server.
type confFixture struct {
	path    string
	version string // the go-sdk version it was built from
	build   string // the command that builds it, for the report
	// command is what serve runs as its child when it is not path alone
	// (a filter in front of the server).
	command []string
}

// childCommand is the command line of serve's child.
func (f confFixture) childCommand() []string {
	if len(f.command) > 0 {
		return f.command
	}
	return []string{f.path}
}

// confSessionEraFixtureDir is the module, beside this package, that pins the
// go-sdk release whose conformance server is the session-era child: a
// module of its own (its go.mod and go.sum), so that this one's go-sdk
// stays v1.8.0. Its go.mod names the server as a tool, so `go build`
// there needs nothing but the module cache (the Go module proxy on the
// first run, as for this module's own dependencies).
const confSessionEraFixtureDir = "testdata/sessionera-fixture"

// confBuild builds mcp-stdio and the server fixtures into a temporary
// directory.
func confBuild(t *testing.T) *confBins {
	t.Helper()
	dir := t.TempDir()
	b := &confBins{
		relay:             filepath.Join(dir, "mcp-stdio"),
		fixture:           confFixture{path: filepath.Join(dir, "everything-server")},
		sessionEraFixture: confFixture{path: filepath.Join(dir, "everything-server-session-era")},
	}
	b.fixture.build = "go build -o everything-server " + confFixturePackage
	b.sessionEraFixture.build = "(cd cmd/mcp-stdio/" + confSessionEraFixtureDir + " && go build -o everything-server-session-era " + confFixturePackage + ")"
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{"", []string{"build", "-o", b.relay, "."}},
		{"", []string{"build", "-o", b.fixture.path, confFixturePackage}},
		{confSessionEraFixtureDir, []string{"build", "-o", b.sessionEraFixture.path, confFixturePackage}},
	} {
		cmd := exec.Command("go", c.args...)
		cmd.Dir = c.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s (in %q): %v\n%s", strings.Join(c.args, " "), c.dir, err, out)
		}
	}
	for _, f := range []struct {
		dir string
		fx  *confFixture
	}{{"", &b.fixture}, {confSessionEraFixtureDir, &b.sessionEraFixture}} {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", confGoSDKModule)
		cmd.Dir = f.dir
		v, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -m %s (in %q): %v", confGoSDKModule, f.dir, err)
		}
		f.fx.version = strings.TrimSpace(string(v))
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b.self = self
	// The suite splits the client command on spaces.
	for _, p := range []string{b.relay, self} {
		if strings.ContainsAny(p, " \t") {
			t.Fatalf("the suite cannot run a program whose path has a space: %q (set TMPDIR)", p)
		}
	}
	b.names = strings.NewReplacer(b.relay, "mcp-stdio", b.fixture.path, "./everything-server",
		b.sessionEraFixture.path, "./everything-server-session-era", self, "mcp-stdio.test")
	return b
}

// confServeURL matches serve's startup line, "mcp-stdio: serving … at URL".
var confServeURL = regexp.MustCompile(`^mcp-stdio: serving .* at (http://\S+)$`)

// confServerTarget is one run of the server scenarios: the revision and
// serve's child.
type confServerTarget struct {
	spec    string
	fixture confFixture
	// failing names the scored scenarios that cannot pass with this
	// child, with the reason: recorded as not scored.
	failing map[string]string
}

// confServerMode runs the server scenarios against mcp-stdio serve.
func confServerMode(t *testing.T, ctx context.Context, suite *confSuite, bins *confBins, target confServerTarget, m *conformancereport.Mode) {
	is := is.New(t)
	serveLog := &confLog{}
	urls := serveLog.Watch(confServeURL)
	serve := exec.Command(bins.relay, append([]string{"serve", "--listen", "127.0.0.1:0", "--"}, target.fixture.childCommand()...)...)
	serve.Stderr = serveLog
	serve.WaitDelay = 5 * time.Second
	is.NoErr(serve.Start())
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = serve.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", serveLog.tail(60))
		}
	})

	var url string
	select {
	case m := <-urls.C:
		url = m[1]
	case err := <-exited:
		stopped = true
		t.Fatalf("serve exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve printed no URL within 30s")
	}

	results := t.TempDir()
	spec := target.spec
	args := []string{"server", "--url", url, "--requirements", spec, "-o", results}
	m.Commands = []string{
		target.fixture.build,
		bins.names.Replace(strings.Join(serve.Args, " ")),
		"node conformance/dist/index.js " + strings.Join(args[:len(args)-1], " ") + " RESULTS",
	}
	m.Commands[2] = strings.Replace(m.Commands[2], url, "http://127.0.0.1:PORT/mcp", 1)
	scored, err := confScored(ctx, suite, spec)
	if err != nil {
		m.Error = err.Error()
		t.Fatal(err)
	}
	out := &confLog{}
	rctx, cancel := context.WithTimeout(ctx, confServerRunTimeout)
	defer cancel()
	code, err := suite.run(rctx, out, args...)
	if err != nil {
		m.Error = fmt.Sprintf("the suite did not finish: %v", err)
		t.Fatalf("%s\n%s", m.Error, out.tail(40))
	}
	got, err := confReadResults(results, "server-")
	if err != nil {
		m.Error = err.Error()
		t.Fatal(err)
	}
	unscoredWhy := confUnscoredReasons(out.String())
	excused := 0
	for _, name := range confSortedKeys(got, scored) {
		s := conformancereport.Scenario{Name: name, Spec: spec, Scored: slices.Contains(scored, name)}
		checks, ran := got[name]
		if why, ok := target.failing[name]; ok && s.Scored {
			s.Scored = false
			s.Notes = conformancereport.CannotPassNote + why
			excused++
		}
		if !s.Scored && s.Notes == "" {
			s.Notes = "not scored: " + cmp.Or(unscoredWhy[name], "not in the "+spec+" requirement set")
		}
		if !ran {
			s.Notes = confJoinNotes(s.Notes, "no result: the suite did not run it")
		}
		confScore(&s, checks)
		s.Passed = ran && s.Failure == 0
		m.Scenarios = append(m.Scenarios, s)
		if s.Scored && !s.Passed {
			t.Errorf("server scenario %s failed:\n%s", name, s.Notes)
		}
		if _, excused := target.failing[name]; excused && ran && s.Passed {
			t.Errorf("server scenario %s passes, but the run excuses it as one that cannot pass with this child: drop the excuse", name)
		}
	}
	passed, total := m.Tally(true)
	t.Logf("server mode: %d/%d scored scenarios pass at %s (suite exit %d)", passed, total, spec, code)
	if want := len(scored) - excused; total != want || passed != total {
		t.Errorf("server mode: %d/%d scored scenarios pass, want %d/%d\n%s", passed, total, want, want, out.tail(60))
	}
	// Warnings are recommendations of the spec (a priming event, a retry
	// field, ...): serve follows them all, in scored scenarios and not.
	// At 2026-07-28 they are recorded only: the children's own count too.
	if warned := m.Warned(); len(warned) > 0 && spec == confServerSpec {
		var b strings.Builder
		for _, s := range m.Scenarios {
			if s.Warning > 0 {
				fmt.Fprintf(&b, "%s (%d):\n%s\n", s.Name, s.Warning, s.Notes)
			}
		}
		t.Errorf("server mode: %d scenarios have warnings, want none:\n%s", len(warned), b.String())
	}
	if code != 0 && spec == confServerSpec {
		t.Errorf("the suite exited %d, want 0", code)
	}

	// One more session, so that shutting down has a child to end.
	sid := confOpenSession(t, ctx, url)
	before, ok := confCountProcesses(target.fixture.path)
	if ok {
		is.True(before >= 1) // a child serves the open session
	}
	t.Logf("opened session %s; stopping serve", sid)
	is.NoErr(serve.Process.Signal(syscall.SIGTERM))
	sigterm := time.Now()
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			m.Notes = append(m.Notes, fmt.Sprintf("FAIL: on SIGTERM serve ended with %v, want exit status 0", err))
		}
		is.NoErr(err) // serve exits 0 on SIGTERM
	case <-time.After(confServeExit):
		m.Notes = append(m.Notes, fmt.Sprintf("FAIL: serve did not exit within %v of SIGTERM", confServeExit))
		t.Fatalf("serve did not exit within %v of SIGTERM", confServeExit)
	}
	took := time.Since(sigterm).Round(10 * time.Millisecond)
	n, ok := confCountProcesses(target.fixture.path)
	switch { // ok is the same on both counts: /proc exists or not
	case !ok:
		m.Notes = append(m.Notes, fmt.Sprintf("SIGTERM with a session open: serve exited 0 after %v (no /proc: child processes not counted)", took))
	case n == 0:
		m.Notes = append(m.Notes, fmt.Sprintf("SIGTERM with a session open: serve exited 0 after %v; its children before: %d, after: 0", took, before))
	default:
		m.Notes = append(m.Notes, fmt.Sprintf("FAIL: after serve exited, %d everything-server processes were still running", n))
	}
	is.Equal(n, 0) // no child process left behind
}

// confScored returns the server scenarios a revision's requirement set
// scores.
func confScored(ctx context.Context, suite *confSuite, spec string) ([]string, error) {
	out := &confLog{}
	code, err := suite.run(ctx, out, "list", "--requirements", spec)
	if err != nil || code != 0 {
		return nil, fmt.Errorf("conformance list --requirements %s: exit %d, %v\n%s", spec, code, err, out)
	}
	var names []string
	for _, l := range confParseList([]byte(out.String()))["server"] {
		names = append(names, l.name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("conformance list --requirements %s listed no server scenario:\n%s", spec, out)
	}
	return names, nil
}

// confUnscoredReasons reads the suite's "Not scored" lines,
// "  ✓ name (reason)", from its output.
func confUnscoredReasons(out string) map[string]string {
	res := map[string]string{}
	_, rest, ok := strings.Cut(out, "Not scored for")
	if !ok {
		return res
	}
	for _, line := range strings.Split(rest, "\n")[1:] {
		line = strings.TrimSpace(line)
		_, line, _ = strings.Cut(line, " ") // the mark
		name, reason, ok := strings.Cut(line, " (")
		if !ok {
			break
		}
		res[name] = strings.TrimSuffix(reason, ")")
	}
	return res
}

// confSortedKeys returns the scored names in their order, then the other
// result names sorted.
func confSortedKeys(got map[string][]confCheck, scored []string) []string {
	names := slices.Clone(scored)
	var rest []string
	for name := range got {
		if !slices.Contains(scored, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// confOpenSession initializes a session at url and returns its id.
func confOpenSession(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conformance-test","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, sid)
	}
	return sid
}

// confCountProcesses counts the live processes running exe; ok is false
// where processes cannot be listed (no /proc).
func confCountProcesses(exe string) (n int, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			n++
		}
	}
	return n, true
}

// confClientRun is one client scenario to run.
type confClientRun struct {
	name, spec string
	required   bool
	// forced runs the scenario with --force at a spec version it does not
	// list.
	forced bool
	// note says why the scenario is not required.
	note string
	// repeat is how many times in a row the scenario must pass (0 means
	// once): for a scenario that once failed intermittently.
	repeat int
	// sessionEraHost makes the client a session-era host (it asks for
	// 2025-11-25, sends initialize) whatever the scenario's spec version:
	// the relay, run with --era modern, bridges it to the scenario's
	// 2026-07-28 server (the scenarios' servers also answer the session
	// era's initialize, and under --era auto the relay would speak the
	// host's era to them, not the 2026-07-28 the scenario checks).
	sessionEraHost bool
}

// label is how the run is named in the report: the scenario, and the
// host's era when the client was made a session-era host.
func (r confClientRun) label() string {
	if r.sessionEraHost {
		return r.name + " (session-era host)"
	}
	return r.name
}

// confRuns picks a client mode's runs from the client scenarios the suite
// lists.
func confRuns(ctx context.Context, suite *confSuite, pick func([]confListed) ([]confClientRun, error)) ([]confClientRun, error) {
	listed, err := confListClient(ctx, suite)
	if err != nil {
		return nil, err
	}
	return pick(listed)
}

// confListClient returns the client scenarios the suite lists.
func confListClient(ctx context.Context, suite *confSuite) ([]confListed, error) {
	out := &confLog{}
	code, err := suite.run(ctx, out, "list", "--client")
	if err != nil || code != 0 {
		return nil, fmt.Errorf("conformance list --client: exit %d, %v\n%s", code, err, out)
	}
	listed := confParseList([]byte(out.String()))["client"]
	if len(listed) == 0 {
		return nil, fmt.Errorf("conformance list --client listed no client scenario:\n%s", out)
	}
	return listed, nil
}

// confAuthRuns returns the authorization scenarios to run: every
// non-extension auth/* scenario at 2025-11-25 where it applies, else at
// 2025-03-26, and at 2026-07-28 where it applies, there as either host
// (confAuthModernRuns); the 2026-07-28-only ones also forced at the
// 2025-11-25 wire (recorded), to tell the relay's authorization logic
// apart from the wire.
func confAuthRuns(listed []confListed) ([]confClientRun, error) {
	var runs []confClientRun
	for _, l := range listed {
		if !confAuthScenario(l.name) {
			continue
		}
		switch {
		case slices.Contains(l.versions, "2025-11-25"):
			runs = append(runs, confClientRun{name: l.name, spec: "2025-11-25", required: true})
			if slices.Contains(l.versions, "2026-07-28") {
				runs = append(runs, confAuthModernRuns(l.name, "")...)
			}
		case slices.Contains(l.versions, "2025-03-26"):
			runs = append(runs, confClientRun{name: l.name, spec: "2025-03-26", required: true})
		case slices.Equal(l.versions, []string{"2026-07-28"}):
			runs = append(runs, confAuthModernRuns(l.name, "2026-07-28 only")...)
			runs = append(runs, confClientRun{name: l.name, spec: "2025-11-25", forced: true, note: "2026-07-28 only; forced at the 2025-11-25 wire"})
		}
	}
	if !slices.ContainsFunc(runs, func(r confClientRun) bool { return r.required }) {
		return nil, errors.New("conformance list --client listed no auth scenario")
	}
	return runs, nil
}

// confAuthModernRuns returns an authorization scenario's runs at
// 2026-07-28: with the client as a 2026-07-28 host and as a session-era
// host (the relay signs in and bridges the era either way); required
// unless confAuthModernFailing names the scenario.
func confAuthModernRuns(name, note string) []confClientRun {
	why := confAuthModernFailing[name]
	var runs []confClientRun
	for _, sessionEraHost := range []bool{false, true} {
		runs = append(runs, confClientRun{name: name, spec: "2026-07-28", required: why == "", note: confJoinNotes(note, why), sessionEraHost: sessionEraHost})
	}
	return runs
}

// confAuthModernFailing names the authorization scenarios that do not pass
// at their 2026-07-28 wire through the relay yet, with the reason; they
// are run and recorded, the others at 2026-07-28 are required.
var confAuthModernFailing = map[string]string{}

// confRelaySpec is the revision the relay scenarios run at.
const confRelaySpec = "2025-11-25"

// confRelayScenarios are the client scenarios, besides authorization, that
// apply to a relay: the client program plays them through the relay
// without --oauth (confPlays). Those with a note are run and recorded but
// not required, the note saying why.
var confRelayScenarios = []struct {
	name, note string
	repeat     int
}{
	{name: "initialize"},
	{name: "tools_call"},
	// Its server asks on the standing GET stream only, so the relay waits
	// for that stream to be open; it once failed 1 run in 6, hence 20 in a
	// row.
	{name: "elicitation-sep1034-client-defaults", repeat: 20},
	{name: "sse-retry"}, // a POST stream closed after a priming event: resumed with Last-Event-ID after its retry delay
	{name: "json-schema-2020-12-preservation"},
}

// confModernRelaySpec is the revision of the relay scenarios of the
// 2026-07-28 era (issue 11).
const confModernRelaySpec = "2026-07-28"

// confModernRelayScenarios are the client scenarios of 2026-07-28 that
// apply to the relay's own part of it (era probe, _meta, routing headers;
// the go-sdk client plays them, confPlays): each runs twice, with the
// client as a 2026-07-28 host (it sends server/discover; the relay passes
// its lines through) and as a session-era host (it sends initialize; the
// relay answers it and stamps every request). Those with a note are run
// and recorded but not required. The suite (confSuiteVersion) offers no
// client scenario at 2026-07-28 for subscriptions/listen, caching or
// cancellation; the other 2026-07-28 client scenarios are authorization
// ones (confAuthRuns).
var confModernRelayScenarios = []struct {
	name, note string
}{
	{name: "tools_call"},
	{name: "request-metadata"}, // clientInfo on every request, the relay's own included
	{name: "http-standard-headers"},
	{name: "json-schema-ref-no-deref"},
	{name: "json-schema-2020-12-preservation"},
	{name: "sep-2322-client-request-state"}, // MRTR: the bridge for a session-era host
	{name: "http-custom-headers"},           // Mcp-Param-* mirroring
	{name: "http-invalid-tool-headers"},     // tools with an invalid x-mcp-header dropped
}

// confRelayRuns returns the relay scenarios to run, each at confRelaySpec,
// which the suite must list for it, and the 2026-07-28 ones at
// confModernRelaySpec, as either host.
func confRelayRuns(listed []confListed) ([]confClientRun, error) {
	var runs []confClientRun
	for _, sc := range confRelayScenarios {
		i := slices.IndexFunc(listed, func(l confListed) bool { return l.name == sc.name })
		if i < 0 || !slices.Contains(listed[i].versions, confRelaySpec) {
			return nil, fmt.Errorf("conformance list --client does not list %s at %s", sc.name, confRelaySpec)
		}
		runs = append(runs, confClientRun{name: sc.name, spec: confRelaySpec, required: sc.note == "", note: sc.note, repeat: sc.repeat})
	}
	for _, sc := range confModernRelayScenarios {
		i := slices.IndexFunc(listed, func(l confListed) bool { return l.name == sc.name })
		if i < 0 || !slices.Contains(listed[i].versions, confModernRelaySpec) {
			return nil, fmt.Errorf("conformance list --client does not list %s at %s", sc.name, confModernRelaySpec)
		}
		for _, sessionEraHost := range []bool{false, true} {
			runs = append(runs, confClientRun{name: sc.name, spec: confModernRelaySpec, required: sc.note == "", note: sc.note, sessionEraHost: sessionEraHost})
		}
	}
	return runs, nil
}

// confClientCommand returns the client program the suite runs, and the
// suite's command line for it with short names, at spec (REV for any).
func confClientCommand(bins *confBins, spec string) (command, line string) {
	command = bins.self + " " + confClientArg + " " + bins.relay
	line = fmt.Sprintf("node conformance/dist/index.js client --command %q --scenario NAME --spec-version %s --timeout %d -o RESULTS",
		bins.names.Replace(command), spec, confClientTimeout.Milliseconds())
	return command, line
}

// confRelayMode runs the relay scenarios (no OAuth) against the relay.
func confRelayMode(t *testing.T, ctx context.Context, suite *confSuite, bins *confBins, sem chan struct{}, m *conformancereport.Mode) {
	runs, err := confRuns(ctx, suite, confRelayRuns)
	if err != nil {
		m.Error = err.Error()
		t.Fatal(err)
	}
	command, line := confClientCommand(bins, "REV") // 2025-11-25 or 2026-07-28
	m.Commands = []string{
		line,
		"# mcp-stdio.test " + confClientArg + " (the go-sdk client) runs, per scenario:",
		"mcp-stdio " + strings.Join(confRelayArgs("", confScenarioContext{}, "URL", false), " "),
		"# as a session-era host at 2026-07-28: mcp-stdio --era modern …",
	}
	confClientScenarios(t, ctx, suite, command, runs, sem, m)
	rp, rt := m.Tally(true)
	ip, it := m.Tally(false)
	t.Logf("relay scenarios: %d/%d required pass at %s; not required: %d/%d", rp, rt, confRelaySpec, ip, it)
}

// confAuthMode runs the authorization scenarios against the relay.
func confAuthMode(t *testing.T, ctx context.Context, suite *confSuite, bins *confBins, sem chan struct{}, m *conformancereport.Mode) {
	runs, err := confRuns(ctx, suite, confAuthRuns)
	if err != nil {
		m.Error = err.Error()
		t.Fatal(err)
	}
	command, line := confClientCommand(bins, "REV")
	m.Commands = []string{
		line,
		"# mcp-stdio.test " + confClientArg + " (the go-sdk client) runs, per scenario:",
		"XDG_CONFIG_HOME=$(mktemp -d) BROWSER='mcp-stdio.test " + confBrowserArg + "' \\",
		"  mcp-stdio " + strings.Join(confRelayArgs("auth/", confScenarioContext{ClientID: "[ID]", ClientSecret: "[SECRET]"}, "URL", false), " "),
		"# [--client-id/--client-secret: from the scenario context; --client-metadata-url " + confCIMDURL + ": auth/basic-cimd;",
		"#  --era modern: as a session-era host at 2026-07-28]",
	}
	confClientScenarios(t, ctx, suite, command, runs, sem, m)
	rp, rt := m.Tally(true)
	ip, it := m.Tally(false)
	t.Logf("client mode: %d/%d required authorization scenarios pass; 2026-07-28 only: %d/%d", rp, rt, ip, it)
}

// confClientScenarios runs client scenarios in parallel, at most
// cap(sem) at once across the client modes, and records them in m in the
// order of runs.
func confClientScenarios(t *testing.T, ctx context.Context, suite *confSuite, command string, runs []confClientRun, sem chan struct{}, m *conformancereport.Mode) {
	var mu sync.Mutex
	t.Run("scenarios", func(t *testing.T) {
		for _, r := range runs {
			sub := r.spec
			if r.forced {
				sub += "-forced"
			}
			name := r.name
			if r.sessionEraHost {
				name += "/session-era-host"
			}
			t.Run(sub+"/"+name, func(t *testing.T) {
				t.Parallel()
				s := confRunRepeated(t, ctx, suite, command, r, sem)
				mu.Lock()
				m.Scenarios = append(m.Scenarios, s)
				mu.Unlock()
			})
		}
	})
	slices.SortStableFunc(m.Scenarios, func(a, b conformancereport.Scenario) int {
		key := func(s conformancereport.Scenario) int {
			return slices.IndexFunc(runs, func(r confClientRun) bool {
				return r.label() == s.Name && r.spec == s.Spec && r.forced == s.Forced
			})
		}
		return key(a) - key(b)
	})
}

// confRunRepeated runs one client scenario r.repeat times in a row (at
// least once), each run holding a place in sem, and stops at the first run
// that does not pass. It returns that run's score, or the last one's,
// noting how many runs passed.
func confRunRepeated(t *testing.T, ctx context.Context, suite *confSuite, command string, r confClientRun, sem chan struct{}) conformancereport.Scenario {
	times := max(r.repeat, 1)
	var s conformancereport.Scenario
	for i := range times {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		s = confRunClientScenario(t, ctx, suite, command, r)
		<-sem
		if times == 1 {
			return s
		}
		if !s.Passed {
			s.Notes = confJoinNotes(s.Notes, fmt.Sprintf("run %d of %d in a row did not pass", i+1, times))
			return s
		}
	}
	s.Notes = confJoinNotes(s.Notes, fmt.Sprintf("passed %d times in a row", times))
	return s
}

// confClientExit matches the suite's report of the client's exit code.
var confClientExit = regexp.MustCompile(`Client exited with code (-?\d+)`)

// confRunClientScenario runs one client scenario and scores it. A required
// scenario that does not pass fails t; an informational one is logged.
func confRunClientScenario(t *testing.T, ctx context.Context, suite *confSuite, command string, r confClientRun) conformancereport.Scenario {
	s := conformancereport.Scenario{Name: r.label(), Spec: r.spec, Scored: r.required, Forced: r.forced, Notes: r.note}
	if r.sessionEraHost {
		command = strings.Replace(command, confClientArg, confClientArg+" "+confSessionEraHostArg, 1)
	}
	results := t.TempDir()
	out := &confLog{}
	sctx, cancel := context.WithTimeout(ctx, confScenarioTimeout)
	defer cancel()
	start := time.Now()
	args := []string{"client", "--command", command, "--scenario", r.name, "--spec-version", r.spec,
		"--timeout", strconv.FormatInt(confClientTimeout.Milliseconds(), 10), "-o", results}
	if r.forced {
		args = append(args, "--force")
	}
	code, err := suite.run(sctx, out, args...)
	s.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	if err != nil {
		s.Notes = confJoinNotes(s.Notes, fmt.Sprintf("the suite did not finish: %v", err))
	}
	got, rerr := confReadResults(results, "")
	if rerr != nil {
		s.Notes = confJoinNotes(s.Notes, rerr.Error())
	}
	checks, ran := got[r.name]
	if err == nil && !ran {
		s.Notes = confJoinNotes(s.Notes, "no result: the suite did not run it")
	}
	confScore(&s, checks)
	// The suite's verdict: exit 0 means no failed or warned check, no
	// timeout, and a clean client exit unless the scenario allows an error.
	s.Passed = err == nil && ran && code == 0 && s.Failure == 0
	if sm := confClientExit.FindStringSubmatch(out.String()); sm != nil {
		note := "client exited with code " + sm[1]
		if s.Passed {
			note += " (the scenario allows it)"
		}
		if _, why, ok := strings.Cut(out.String(), confClientFailed); ok {
			why, _, _ = strings.Cut(why, "\n")
			note += ": " + why
		}
		s.Notes = confJoinNotes(s.Notes, note)
	}
	if strings.Contains(out.String(), "Client timed out") {
		s.Notes = confJoinNotes(s.Notes, "client timed out")
	}
	switch {
	case s.Passed:
	case r.required:
		t.Errorf("%s at %s failed (suite exit %d):\n%s\nsuite output:\n%s", r.name, r.spec, code, s.Notes, out.tail(80))
	default:
		t.Logf("%s at %s does not pass yet (not required):\n%s", r.name, r.spec, s.Notes)
	}
	return s
}
