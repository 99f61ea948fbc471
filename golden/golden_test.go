package golden

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"
	"golang.org/x/tools/txtar"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// update rewrites the want/* sections of the transcripts from what the relay
// did. This package is the only one that defines it (go test ./golden
// -update), so `go test ./... -update` is never needed.
var update = flag.Bool("update", false, "rewrite the want/* sections of the golden transcripts")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Section names of a relay transcript.
const (
	secArgs       = "args"
	secEnv        = "env"
	secStdin      = "stdin"
	secServer     = "server"
	secWantHTTP   = "want/http"
	secWantStdout = "want/stdout"
	secWantExit   = "want/exit"
	secWantStderr = "want/stderr"
)

// TestRelay runs every transcript in testdata/relay.
func TestRelay(t *testing.T) { eachTranscript(t, "relay", runTranscript) }

// eachTranscript runs run on every transcript in testdata/dir, each as a
// parallel subtest named after its file.
func eachTranscript(t *testing.T, dir string, run func(t *testing.T, file string)) {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts in testdata/%s", dir)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, file)
		})
	}
}

// relayCase is a parsed transcript.
type relayCase struct {
	args   []string
	env    map[string]string
	stdin  []string
	script []*entry
	target string // the server URL among args, for rendering paths
	// serverText is the server section, raw: a requestState found in it
	// is the server's, not one the relay sealed (see relayStates).
	serverText string
}

// outcome is what one run of the relay produced.
type outcome struct {
	http     []byte
	stdout   []byte
	stderr   string
	exit     int
	problems []string
}

// readTranscript reads a transcript, insists on its description and skips
// the test when the transcript is marked to be skipped.
func readTranscript(t *testing.T, file string) *txtar.Archive {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(src)
	if strings.TrimSpace(string(ar.Comment)) == "" {
		t.Errorf("%s: the archive comment must describe what the case pins and why", file)
	}
	if reason := skipReason(ar); reason != "" {
		t.Skip(reason)
	}
	return ar
}

func runTranscript(t *testing.T, file string) {
	is := is.New(t)
	ar := readTranscript(t, file)
	c, err := parseCase(ar)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}

	var got outcome
	synctest.Test(t, func(t *testing.T) { got = runRelay(t, c) })

	for _, p := range got.problems {
		t.Errorf("server script: %s", p)
	}
	checkStderr(t, got.stderr, section(ar, secWantStderr)) // never rewritten
	if *update {
		writeWants(t, file, ar, got)
		return
	}
	is.Equal(string(got.http), string(section(ar, secWantHTTP)))     // want/http
	is.Equal(string(got.stdout), string(section(ar, secWantStdout))) // want/stdout
	wantExit := 0
	if s := section(ar, secWantExit); s != nil {
		wantExit, err = strconv.Atoi(strings.TrimSpace(string(s)))
		is.NoErr(err) // want/exit holds an exit code
	}
	is.Equal(got.exit, wantExit) // want/exit
}

// skipReason returns the t.Skip message of a transcript that pins a known
// bug: its comment has a line starting "# BUG:", and a line starting
// "# SKIP:" gives the message (the BUG line itself when there is none).
func skipReason(ar *txtar.Archive) string {
	var bug, skip string
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		switch {
		case strings.HasPrefix(line, "# BUG:"):
			bug = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		case strings.HasPrefix(line, "# SKIP:"):
			skip = strings.TrimSpace(strings.TrimPrefix(line, "# SKIP:"))
		}
	}
	if bug == "" {
		return ""
	}
	if skip != "" {
		return skip
	}
	return bug
}

// section returns the data of the named file of ar, nil when absent.
func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			if f.Data == nil {
				return []byte{}
			}
			return f.Data
		}
	}
	return nil
}

func parseCase(ar *txtar.Archive) (relayCase, error) {
	known := map[string]bool{secArgs: true, secEnv: true, secStdin: true, secServer: true,
		secWantHTTP: true, secWantStdout: true, secWantExit: true, secWantStderr: true}
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if !known[f.Name] {
			return relayCase{}, fmt.Errorf("unknown section %q", f.Name)
		}
		if seen[f.Name] {
			return relayCase{}, fmt.Errorf("section %q appears twice", f.Name)
		}
		seen[f.Name] = true
	}
	var c relayCase
	for _, line := range lines(section(ar, secArgs)) {
		words, err := splitWords(line)
		if err != nil {
			return c, fmt.Errorf("args: %v", err)
		}
		c.args = append(c.args, words...)
	}
	if len(c.args) == 0 {
		return c, fmt.Errorf("no args section")
	}
	for _, a := range c.args {
		if strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") {
			c.target = a
		}
	}
	c.env = map[string]string{}
	for _, line := range lines(section(ar, secEnv)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return c, fmt.Errorf("env: want KEY=VALUE, got %q", line)
		}
		c.env[k] = v
	}
	c.stdin = lines(section(ar, secStdin))
	script, err := parseScript(section(ar, secServer))
	if err != nil {
		return c, err
	}
	c.script = script
	c.serverText = string(section(ar, secServer))
	return c, nil
}

// relayStates names the requestStates the relay seals for a 2026-07-28
// host of a session-era server (mw.ParkChildRequests), which are random:
// on stdout each is written $STATE<n>, n counting them in order of first
// appearance, and in a stdin line $STATE<n> stands for the n-th one and
// $TAMPERED<n> for it with one character of its nonce changed. A
// requestState that appears in the server section is the server's and
// keeps its bytes.
type relayStates struct {
	server string
	values []string
}

// relayStateRE finds a requestState member's string value.
var relayStateRE = regexp.MustCompile(`"requestState":"([^"\\]*)"`)

// scan names the relay's requestStates in out.
func (r *relayStates) scan(out string) {
	for _, m := range relayStateRE.FindAllStringSubmatch(out, -1) {
		v := m[1]
		if strings.Contains(r.server, v) || slices.Contains(r.values, v) {
			continue
		}
		r.values = append(r.values, v)
	}
}

// render returns out with the relay's requestStates named.
func (r *relayStates) render(out string) string {
	r.scan(out)
	for i := len(r.values) - 1; i >= 0; i-- { // $STATE10 before $STATE1
		out = strings.ReplaceAll(out, `"`+r.values[i]+`"`, `"$STATE`+strconv.Itoa(i+1)+`"`)
	}
	return out
}

// fill returns stdin line with the names of the requestStates seen so
// far replaced by their values.
func (r *relayStates) fill(line string) string {
	for i := len(r.values) - 1; i >= 0; i-- {
		n := strconv.Itoa(i + 1)
		v := r.values[i]
		tampered := []byte(v)
		if len(tampered) > 8 {
			tampered[8] ^= 'A' ^ 'B' // in the nonce: the seal no longer opens
		}
		line = strings.ReplaceAll(line, "$STATE"+n, v)
		line = strings.ReplaceAll(line, "$TAMPERED"+n, string(tampered))
	}
	return line
}

// lines splits a section into its lines, without their terminators.
func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// splitWords splits a line the way a shell would for simple cases: on
// blanks, with single quotes, double quotes and backslash escapes.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// runRelay runs cli.Relay on one transcript inside the caller's synctest
// bubble. stdin is fed one line at a time, the bubble settling after each,
// so everything a line causes has happened (without fake time passing)
// before the next is written. A stdin line "# sleep <duration>" lets that
// much fake time pass instead; other lines starting with '#' are comments.
// After the last line stdin is closed and fake time runs until the relay
// returns.
func runRelay(t *testing.T, c relayCase) outcome {
	fake := newFakeServer(t, c.script, c.target)
	states := &relayStates{server: c.serverText}
	stdinR, stdinW := io.Pipe()
	var stdout transporttest.SyncBuffer
	var stderr transporttest.SyncBuffer
	getenv := func(k string) string { return c.env[k] }
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = cli.Relay(context.Background(), c.args, getenv, stdinR, &stdout, &stderr,
			cli.Options{Version: "golden", HTTPClient: &http.Client{Transport: fake}})
	}()

	fake.settle(nil) // what the relay does at start (the HTTP+SSE stream)
	for _, line := range c.stdin {
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			if arg, ok := strings.CutPrefix(strings.TrimSpace(rest), "sleep "); ok {
				d, perr := time.ParseDuration(strings.TrimSpace(arg))
				if perr != nil {
					t.Fatalf("stdin: bad sleep directive %q", line)
				}
				elapsed := make(chan struct{})
				time.AfterFunc(d, func() { close(elapsed) })
				fake.settle(elapsed)
			}
			continue
		}
		if strings.Contains(line, "$") {
			states.scan(stdout.String())
			line = states.fill(line)
		}
		written := make(chan struct{})
		go func() {
			defer close(written)
			_, _ = io.WriteString(stdinW, line+"\n")
		}()
		select {
		case <-written:
		case <-done: // the relay stopped reading; the write ends below
		}
		fake.settle(nil)
	}
	stdinW.Close()
	fake.settle(done)
	stdinR.Close()
	synctest.Wait()

	fake.mu.Lock()
	problems := append([]string(nil), fake.problems...)
	fake.mu.Unlock()
	for _, e := range fake.unused() {
		problems = append(problems, fmt.Sprintf("entry %s was never used", e))
	}
	return outcome{
		http:     fake.transcript(),
		stdout:   []byte(states.render(stdout.String())),
		stderr:   stderr.String(),
		exit:     cli.ExitCode(err),
		problems: problems,
	}
}

// checkStderr checks that every line of want appears in got, and that no
// line of want starting with '!' (the rest of it) does. Logs carry
// timestamps, so stderr is never compared whole.
func checkStderr(t *testing.T, got string, want []byte) {
	t.Helper()
	for _, line := range lines(want) {
		if line == "" {
			continue
		}
		if absent, ok := strings.CutPrefix(line, "!"); ok {
			if strings.Contains(got, absent) {
				t.Errorf("want/stderr: stderr must not contain %q; stderr:\n%s", absent, got)
			}
			continue
		}
		if !strings.Contains(got, line) {
			t.Errorf("want/stderr: stderr lacks %q; stderr:\n%s", line, got)
		}
	}
}

// writeWants rewrites the want/http, want/stdout and (when present or
// non-zero) want/exit sections of file from got, leaving the rest of the
// archive as it was.
func writeWants(t *testing.T, file string, ar *txtar.Archive, got outcome) {
	set := func(name string, data []byte) {
		for i := range ar.Files {
			if ar.Files[i].Name == name {
				ar.Files[i].Data = data
				return
			}
		}
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: data})
	}
	set(secWantHTTP, got.http)
	set(secWantStdout, got.stdout)
	if section(ar, secWantExit) != nil || got.exit != 0 {
		set(secWantExit, []byte(strconv.Itoa(got.exit)+"\n"))
	}
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}
