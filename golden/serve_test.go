//go:build unix

package golden

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// Section names of a serve transcript (args, env, want/exit and
// want/stderr are shared with the relay's).
const (
	secRequests      = "requests"
	secWantResponses = "want/responses"
)

// selfPlaceholder, as a word of args, stands for the test binary's path:
// the mcp-stdio binary of these tests (see serve_child_test.go), so that
// `-- $MCP_STDIO example-server --session-era-only` publishes the example
// server with flags of its own.
const selfPlaceholder = "$MCP_STDIO"

// dirPlaceholder, in args, stands for the directory a case's file/NAME
// sections are written to (a fresh one per run), and filePrefix starts
// the names of those sections.
const (
	dirPlaceholder = "$DIR"
	filePrefix     = "file/"
)

// serveWait bounds every wait of a serve transcript; reaching it fails the
// case (it is a deadline, never a way to let things happen).
const serveWait = 30 * time.Second

// serveDefaultArgs come before a transcript's own args: a free loopback
// port, and debug logs, which name every child's pid so that the test can
// check that all of them are gone. A transcript's args may override both.
var serveDefaultArgs = []string{"--listen", "127.0.0.1:0", "--log-level", "debug"}

// TestServe runs every transcript in testdata/serve: cli.Serve, the code
// `mcp-stdio serve` runs, on a loopback port, publishing the bundled
// example server (this test binary, see serve_child_test.go) to the HTTP
// exchanges of the requests section.
func TestServe(t *testing.T) { eachTranscript(t, "serve", runServeTranscript) }

// serveCase is a parsed serve transcript.
type serveCase struct {
	args     []string
	env      map[string]string
	requests []*serveRequest
}

// serveRequest is one HTTP request of the requests section.
type serveRequest struct {
	line    int // of the request line in the requests section, 1-based
	method  string
	target  string // path and query
	header  http.Header
	host    string // a Host header, sent as the request's Host
	body    []byte
	hasBody bool
	events  int // GET: the events its stream carries in all; POST: before serve shuts down
	ready   int // GET, POST: the events it carries before the next request is sent
	// awaitLog are the lines serve's stderr must carry before the
	// request is sent (# await-log REGEXP lines before it).
	awaitLog []*regexp.Regexp
	// drain: serve is told to shut down, as by SIGTERM, before the
	// request is sent, once its drain has started (a # drain line before
	// it).
	drain bool
}

// awaitLogDirective starts a requests line that is no comment: the rest
// of the line is a regular expression that a line of serve's stderr (its
// logs and its children's) must match before the next request is sent.
const awaitLogDirective = "# await-log "

// drainDirective is a requests line that is no comment: serve is told to
// shut down (its context ends, as on SIGTERM) before the next request is
// sent, which waits until serve's drain has started.
const drainDirective = "# drain"

// drainStarted is serve's log line at the start of its drain.
var drainStarted = regexp.MustCompile(`msg="drain started`)

// serveOutcome is what one run of serve produced.
type serveOutcome struct {
	responses []byte
	stderr    string
	exit      int
	problems  []string
}

func runServeTranscript(t *testing.T, file string) {
	is := is.New(t)
	ar := readTranscript(t, file)
	c, err := parseServeCase(ar, t.TempDir())
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}

	got := runServe(c)

	for _, p := range got.problems {
		t.Errorf("%s: %s", file, p)
	}
	if os.Getenv("GOLDEN_DUMP_STDERR") != "" {
		t.Log(got.stderr)
	}
	checkStderr(t, got.stderr, section(ar, secWantStderr)) // never rewritten
	if *update {
		writeServeWants(t, file, ar, got)
		return
	}
	is.Equal(string(got.responses), string(section(ar, secWantResponses))) // want/responses
	wantExit := 0
	if s := section(ar, secWantExit); s != nil {
		wantExit, err = strconv.Atoi(strings.TrimSpace(string(s)))
		is.NoErr(err) // want/exit holds an exit code
	}
	is.Equal(got.exit, wantExit) // want/exit
}

// parseServeCase reads a serve transcript. Its file/NAME sections are
// written into dir as NAME (0600), and $DIR in args stands for dir.
func parseServeCase(ar *txtar.Archive, dir string) (serveCase, error) {
	var c serveCase
	known := []string{secArgs, secEnv, secRequests, secWantResponses, secWantExit, secWantStderr}
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if name, ok := strings.CutPrefix(f.Name, filePrefix); ok {
			if name == "" || strings.ContainsAny(name, `/\`) {
				return c, fmt.Errorf("section %q: a file's name is one plain name", f.Name)
			}
			if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o600); err != nil {
				return c, err
			}
			continue
		}
		if !slices.Contains(known, f.Name) {
			return c, fmt.Errorf("unknown section %q (a serve transcript has %v, and file/NAME)", f.Name, known)
		}
		if seen[f.Name] {
			return c, fmt.Errorf("section %q appears twice", f.Name)
		}
		seen[f.Name] = true
	}
	for _, line := range lines(section(ar, secArgs)) {
		words, err := splitWords(line)
		if err != nil {
			return c, fmt.Errorf("args: %v", err)
		}
		for i, w := range words {
			words[i] = strings.ReplaceAll(w, dirPlaceholder, dir)
			if w == selfPlaceholder {
				exe, err := os.Executable()
				if err != nil {
					return c, fmt.Errorf("args: %s: %v", selfPlaceholder, err)
				}
				words[i] = exe
			}
		}
		c.args = append(c.args, words...)
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
	reqs, err := parseRequests(section(ar, secRequests))
	if err != nil {
		return c, err
	}
	c.requests = reqs
	return c, nil
}

// parseRequests parses a requests section:
//
//	# a comment
//	POST /mcp                    request line: METHOD target [events=N] [ready=N]
//	Content-Type: application/json
//	Mcp-Session-Id: $SESSION     headers, one per line
//	                             a blank line
//	{"jsonrpc":"2.0",...}        the body: the lines up to the next blank line
//
// A request without a body ends at the blank line after its headers (or
// at the next request line). A body never starts with '#': a comment after
// the headers' blank line is a comment. events=N, on a GET only, says how
// many events its stream carries in all (0 when absent); the run waits for
// them before it shuts serve down, and fails when there are more. ready=N,
// on a GET, says how many it carries before the next request is sent
// (the endpoint event of an HTTP+SSE stream, whose session the next
// requests name); 0 when absent. A line "# await-log REGEXP" before a
// request holds it back until serve's stderr has a line matching REGEXP.
// On a POST whose answer is an event
// stream, ready=N lets the next request go once the stream has carried N
// events, while it is still open (a request in flight, a listen), and
// events=N is how many it carries before serve shuts down: the run waits
// for them instead of the stream's end (what the shutdown makes it carry,
// such as a listen's final result, comes after and is not counted).
func parseRequests(src []byte) ([]*serveRequest, error) {
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	ls := strings.Split(text, "\n")
	if n := len(ls); n > 0 && ls[n-1] == "" {
		ls = ls[:n-1]
	}
	var reqs []*serveRequest
	var await []*regexp.Regexp
	drain := false
	for i := 0; i < len(ls); {
		line := ls[i]
		errf := func(format string, args ...any) error {
			return fmt.Errorf("requests line %d: %s: %q", i+1, fmt.Sprintf(format, args...), ls[i])
		}
		if expr, ok := strings.CutPrefix(line, awaitLogDirective); ok {
			re, err := regexp.Compile(strings.TrimSpace(expr))
			if err != nil {
				return nil, errf("await-log: %v", err)
			}
			await = append(await, re)
			i++
			continue
		}
		if strings.TrimSpace(line) == drainDirective {
			drain = true
			i++
			continue
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		req, err := parseRequestLine(line)
		if err != nil {
			return nil, errf("%v", err)
		}
		req.line = i + 1
		req.awaitLog, await = await, nil
		req.drain, drain = drain, false
		reqs = append(reqs, req)
		for i++; i < len(ls) && ls[i] != "" && !isRequestLine(ls[i]) && !strings.HasPrefix(ls[i], awaitLogDirective) && strings.TrimSpace(ls[i]) != drainDirective; i++ {
			if strings.HasPrefix(ls[i], "#") {
				continue
			}
			name, value, ok := strings.Cut(ls[i], ":")
			if !ok || !isToken(name) {
				return nil, errf("want a header line 'Name: value' (and a blank line before the body)")
			}
			name, value = textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value)
			if name == "Host" {
				req.host = value
				continue
			}
			req.header.Add(name, value)
		}
		if i >= len(ls) || ls[i] != "" {
			continue // no blank line: no body
		}
		i++
		if i >= len(ls) || ls[i] == "" || strings.HasPrefix(ls[i], "#") || isRequestLine(ls[i]) {
			continue
		}
		start := i
		for i < len(ls) && ls[i] != "" {
			i++
		}
		req.body = []byte(strings.Join(ls[start:i], "\n"))
		req.hasBody = true
	}
	if len(await) > 0 {
		return nil, errors.New("requests: an await-log line must come before a request")
	}
	if drain {
		return nil, errors.New("requests: a drain line must come before a request")
	}
	if len(reqs) == 0 && len(src) > 0 && strings.TrimSpace(text) != "" {
		return nil, errors.New("requests: no request line")
	}
	return reqs, nil
}

// isRequestLine reports whether line starts a request: an HTTP method and
// a target starting with '/'.
func isRequestLine(line string) bool {
	f := strings.Fields(line)
	return len(f) >= 2 && isHTTPMethod(f[0]) && strings.HasPrefix(f[1], "/")
}

func parseRequestLine(line string) (*serveRequest, error) {
	if !isRequestLine(line) {
		return nil, errors.New("want a request line 'METHOD /path [events=N] [ready=N]'")
	}
	f := strings.Fields(line)
	req := &serveRequest{method: f[0], target: f[1], header: http.Header{}}
	for _, opt := range f[2:] {
		name, v, _ := strings.Cut(opt, "=")
		n, err := strconv.Atoi(v)
		switch {
		case name != "events" && name != "ready":
			return nil, fmt.Errorf("unknown request option %q (want events=N or ready=N)", opt)
		case err != nil || n < 0:
			return nil, fmt.Errorf("%s wants a count, got %q", name, v)
		case req.method != http.MethodGet && req.method != http.MethodPost:
			return nil, fmt.Errorf("%s=N is for GET and POST streams", name)
		case name == "events":
			req.events = n
		default:
			req.ready = n
		}
	}
	return req, nil
}

// servingLine is the line cli.Serve prints once it listens.
var servingLine = regexp.MustCompile(`mcp-stdio: serving .* at (http://\S+)$`)

// childStartedLine is the debug log line naming a session's child.
var childStartedLine = regexp.MustCompile(`server process started.* pid=(\d+)`)

// serveRun is one run of serve: the exchanges sent so far and what came
// back.
type serveRun struct {
	client *http.Client
	base   *url.URL
	ctx    context.Context // the requests'

	changed chan struct{} // something settled or arrived; capacity 1

	mu        sync.Mutex
	exchanges []*exchange
	ids       map[string]string // session id → placeholder
	byName    map[string]string // placeholder → session id (its random part when it names a replica)
	states    map[string]string // requestState → placeholder
	byState   map[string]string // placeholder → requestState
	answered  map[frame.ID]bool // server requests the client has answered
	problems  []string
}

// exchange is one request and its response as it arrives. Its fields are
// guarded by serveRun.mu.
type exchange struct {
	req    *serveRequest
	label  string
	await  []frame.ID // the ids of the requests the POST carries
	head   string     // rendered status and headers
	gotHdr bool
	status int
	sse    bool
	body   bytes.Buffer
	seen   map[frame.ID]bool // responses on its stream, or on a GET stream for a 202
	asked  []frame.ID        // requests from the server on its stream
	events int
	// shutEvents is how many events a POST stream had carried when serve
	// was told to shut down.
	shutEvents int
	done       bool
	err        string
}

// problem records a failure; the test reports them at the end.
func (r *serveRun) problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// signal wakes the goroutine waiting for the exchanges to settle.
func (r *serveRun) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// runServe runs cli.Serve with the case's args and env, sends the requests
// one at a time — each only once everything before it has settled (see
// settled) — then shuts serve down the way SIGTERM does, waits for every
// response to end, and checks that no child process is left.
func runServe(c serveCase) serveOutcome {
	var out serveOutcome
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stderr := &transporttest.SyncBuffer{} // its logs and its children's stderr
	ready := stderr.Watch(servingLine)
	getenv := func(k string) string { return c.env[k] }
	args := append(slices.Clone(serveDefaultArgs), c.args...)
	var serveErr error
	served := make(chan struct{}) // closed when cli.Serve has returned serveErr
	go func() {
		defer close(served)
		serveErr = cli.Serve(ctx, args, getenv, strings.NewReader(""), io.Discard, stderr, cli.Options{Version: serveVersion, Rand: zeros{}})
	}()

	// One deadline for the whole run: once it has passed, every wait below
	// gives up at once.
	deadlineCtx, cancelDeadline := context.WithTimeout(context.Background(), serveWait)
	defer cancelDeadline()
	deadline := deadlineCtx.Done()
	var endpoint string
	select {
	case m := <-ready.C:
		endpoint = m[1]
	case <-served:
		// serve refused to start: only its exit code and stderr count.
		out.exit, out.stderr = cli.ExitCode(serveErr), stderr.String()
		if len(c.requests) > 0 {
			out.problems = append(out.problems, fmt.Sprintf("serve exited (%v) before listening; requests were not sent", serveErr))
		}
		return out
	case <-deadline:
		stop()
		<-served
		out.stderr = stderr.String()
		out.problems = append(out.problems, "serve printed no serving line within "+serveWait.String())
		return out
	}
	base, err := url.Parse(endpoint)
	if err != nil {
		stop()
		<-served
		out.problems = append(out.problems, fmt.Sprintf("bad endpoint %q: %v", endpoint, err))
		return out
	}

	reqCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	transport := &http.Transport{}
	r := &serveRun{
		client:   &http.Client{Transport: transport},
		base:     &url.URL{Scheme: base.Scheme, Host: base.Host},
		ctx:      reqCtx,
		changed:  make(chan struct{}, 1),
		ids:      map[string]string{},
		byName:   map[string]string{},
		states:   map[string]string{},
		byState:  map[string]string{},
		answered: map[frame.ID]bool{},
	}
	var readers sync.WaitGroup
	settled := true
	for _, req := range c.requests {
		if settled = r.settle(deadline, served, false); !settled {
			break
		}
		if req.drain {
			stop() // as SIGTERM does
			req.awaitLog = append(req.awaitLog, drainStarted)
		}
		if settled = r.awaitLog(stderr, req, deadline, served); !settled {
			break
		}
		x, hreq := r.prepare(req)
		readers.Go(func() { r.exchange(x, hreq) })
	}
	if settled && !r.settle(deadline, served, true) {
		settled = false
	}
	if !settled {
		cancelRequests() // the case has failed: the client goes away
	}
	r.mu.Lock()
	for _, x := range r.exchanges {
		x.shutEvents = x.events
	}
	r.mu.Unlock()

	// Shut down as on SIGTERM: drain, end the sessions and their children.
	stop()
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), serveWait)
	defer cancelShutdown()
	select {
	case <-served:
	case <-shutdownCtx.Done():
		r.problem("serve did not return within %s of its shutdown", serveWait)
		cancelRequests()
		<-served
	}
	allRead := make(chan struct{})
	go func() { readers.Wait(); close(allRead) }()
	select {
	case <-allRead:
	case <-shutdownCtx.Done():
		r.problem("responses still open after serve returned")
		cancelRequests()
		<-allRead
	}
	transport.CloseIdleConnections()

	out.stderr = stderr.String()
	out.exit = cli.ExitCode(serveErr)
	for _, m := range childStartedLine.FindAllStringSubmatch(out.stderr, -1) {
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			r.problem("child process %d is still there after serve returned", pid)
		}
	}
	if strings.Contains(out.stderr, "WARNING: DATA RACE") {
		r.problem("a child process reported a data race:\n%s", out.stderr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.exchanges {
		if x.req.method == http.MethodGet && x.events != x.req.events {
			r.problems = append(r.problems, fmt.Sprintf("requests line %d: the GET stream carried %d events, events=%d says", x.req.line, x.events, x.req.events))
		}
		if x.req.method == http.MethodPost && x.req.events > 0 && x.shutEvents != x.req.events {
			r.problems = append(r.problems, fmt.Sprintf("requests line %d: the POST stream carried %d events before the shutdown, events=%d says", x.req.line, x.shutEvents, x.req.events))
		}
	}
	out.responses = r.render()
	out.problems = append(out.problems, r.problems...)
	return out
}

// settled reports whether x can be left alone while the next request is
// sent (final: while serve shuts down): whatever it carries from now on is
// fixed by what has been sent.
//   - A response that is not an event stream: once read to its end; a 202
//     to a POST of requests (HTTP+SSE) once their answers came on a GET
//     stream, or while the child waits for the client (see
//     settledElsewhere).
//   - A POST's event stream: once it has ended, or while the server waits
//     for the client to answer a request it sent on the stream; with
//     ready=N, once it has carried N events; finally, with events=N, once
//     it has carried N events.
//   - A GET's event stream: once it has carried its first ready=N events
//     (what it carries next is caused by later requests); finally, once
//     it has carried its events=N events.
//
// The caller holds r.mu.
func (r *serveRun) settled(x *exchange, final bool) bool {
	switch {
	case x.done && x.status == http.StatusAccepted && len(x.await) > 0:
		return r.settledElsewhere(x)
	case x.done:
		return true
	case !x.gotHdr || !x.sse:
		return false
	case x.req.method == http.MethodGet && final:
		return x.events >= x.req.events
	case x.req.method == http.MethodGet:
		return x.events >= x.req.ready
	case final && x.req.events > 0 && x.events >= x.req.events:
		return true
	case !final && x.req.ready > 0 && x.events >= x.req.ready:
		return true
	}
	for _, id := range x.asked {
		if !r.answered[id] {
			return true
		}
	}
	return false
}

// settledElsewhere reports whether x, a POST whose requests were accepted
// with 202 (HTTP+SSE: their answers come on the session's stream), has
// settled: once the GET streams have carried the responses to all of
// them, or while the child waits for the client to answer a request a
// GET stream carried. The caller holds r.mu.
func (r *serveRun) settledElsewhere(x *exchange) bool {
	if len(x.seen) == len(x.await) {
		return true
	}
	for _, y := range r.exchanges {
		if y.req.method != http.MethodGet {
			continue
		}
		for _, id := range y.asked {
			if !r.answered[id] {
				return true
			}
		}
	}
	return false
}

// settle waits until every exchange so far has settled. It reports false
// (and records a problem) when deadline passes or serve stops first.
func (r *serveRun) settle(deadline, served <-chan struct{}, final bool) bool {
	for {
		r.mu.Lock()
		var pending *exchange
		for _, x := range r.exchanges {
			if !r.settled(x, final) {
				pending = x
				break
			}
		}
		r.mu.Unlock()
		if pending == nil {
			return true
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.problem("requests line %d (%s) never settled within %s", pending.req.line, pending.label, serveWait)
			return false
		case <-served:
			r.problem("serve returned while requests line %d (%s) was unsettled", pending.req.line, pending.label)
			return false
		}
	}
}

// awaitLog waits until stderr has a line matching each of req's
// await-log expressions. It reports false (and records a problem) when
// deadline passes or serve stops first.
func (r *serveRun) awaitLog(stderr *transporttest.SyncBuffer, req *serveRequest, deadline, served <-chan struct{}) bool {
	for _, re := range req.awaitLog {
		w := stderr.Watch(re)
		select {
		case <-w.C:
		case <-deadline:
			r.problem("requests line %d: no line of stderr matched await-log %q within %s", req.line, re, serveWait)
			return false
		case <-served:
			r.problem("requests line %d: serve returned before a line of stderr matched await-log %q", req.line, re)
			return false
		}
	}
	return true
}

// prepare builds the HTTP request of req, with session placeholders
// replaced, and records its exchange.
func (r *serveRun) prepare(req *serveRequest) (*exchange, *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := &exchange{req: req, label: requestLabel(req), seen: map[frame.ID]bool{}}
	r.exchanges = append(r.exchanges, x)
	var body io.Reader = http.NoBody
	if req.hasBody {
		body = bytes.NewReader(r.expandStates(req, req.body))
		x.await = requestIDs(req.body)
		for _, id := range responseIDs(req.body) {
			r.answered[id] = true
		}
	}
	u := *r.base
	target, err := url.Parse(r.expand(req, req.target))
	if err != nil {
		r.problems = append(r.problems, fmt.Sprintf("requests line %d: bad target: %v", req.line, err))
	} else {
		u.Path, u.RawQuery = target.Path, target.RawQuery
	}
	hreq, err := http.NewRequestWithContext(r.ctx, req.method, u.String(), body)
	if err != nil {
		panic(err) // the method and URL were checked above
	}
	for name, values := range req.header {
		for _, v := range values {
			hreq.Header.Add(name, r.expand(req, v))
		}
	}
	if req.host != "" {
		hreq.Host = req.host
	}
	return x, hreq
}

// sessionPlaceholder matches $SESSION, $SESSION2, ...
var sessionPlaceholder = regexp.MustCompile(`\$SESSION[0-9]*`)

// expand replaces session placeholders in a header value with the ids
// they stand for. The caller holds r.mu.
func (r *serveRun) expand(req *serveRequest, v string) string {
	return sessionPlaceholder.ReplaceAllStringFunc(v, func(name string) string {
		id, ok := r.byName[name]
		if !ok {
			r.problems = append(r.problems, fmt.Sprintf("requests line %d: %s names no session yet", req.line, name))
			return name
		}
		return id
	})
}

// statePlaceholder matches $STATE, $STATE2, ..., each optionally followed
// by ~ (the state with one character changed).
var statePlaceholder = regexp.MustCompile(`\$STATE[0-9]*~?`)

// expandStates replaces requestState placeholders in a request body with
// the states they stand for; $STATE~ is $STATE with its middle character
// changed, a tampered state. The caller holds r.mu.
func (r *serveRun) expandStates(req *serveRequest, body []byte) []byte {
	return statePlaceholder.ReplaceAllFunc(body, func(b []byte) []byte {
		name, tamper := strings.CutSuffix(string(b), "~")
		state, ok := r.byState[name]
		if !ok {
			r.problems = append(r.problems, fmt.Sprintf("requests line %d: %s names no requestState yet", req.line, name))
			return b
		}
		if tamper {
			s := []byte(state)
			i := len(s) / 2
			if s[i] == 'A' {
				s[i] = 'B'
			} else {
				s[i] = 'A'
			}
			state = string(s)
		}
		return []byte(state)
	})
}

// noteState gives the requestState of a result m, if it has one, its
// placeholder. The caller holds r.mu.
func (r *serveRun) noteState(m frame.Message) {
	if !m.Kind().IsResponse() {
		return
	}
	st := m.Get("result.requestState")
	if st.Type != gjson.String || st.Str == "" {
		return
	}
	if _, ok := r.states[st.Str]; ok {
		return
	}
	name := "$STATE"
	if n := len(r.states) + 1; n > 1 {
		name += strconv.Itoa(n)
	}
	r.states[st.Str], r.byState[name] = name, st.Str
}

// exchange sends one request and reads its response to the end.
func (r *serveRun) exchange(x *exchange, hreq *http.Request) {
	defer r.signal()
	resp, err := r.client.Do(hreq)
	if err != nil {
		r.mu.Lock()
		x.err, x.done = err.Error(), true
		r.mu.Unlock()
		return
	}
	defer resp.Body.Close()
	sse := isEventStream(resp.Header.Get("Content-Type"))
	r.mu.Lock()
	x.head, x.gotHdr, x.status, x.sse = r.renderHead(resp), true, resp.StatusCode, sse
	r.mu.Unlock()
	r.signal()

	body := &exchangeBody{r: r, x: x}
	if sse {
		sr := frame.NewSSEReader(io.TeeReader(resp.Body, body), 0)
		for {
			ev, err := sr.Next()
			if err != nil {
				break
			}
			r.event(x, ev)
		}
	}
	_, err = io.Copy(body, resp.Body) // the rest (all of it when not a stream)
	r.mu.Lock()
	if !sse {
		eachMessage(x.body.Bytes(), r.noteState)
	}
	x.done = true
	if err != nil {
		x.err = "the body broke off: " + err.Error()
	}
	r.mu.Unlock()
}

// exchangeBody records a response body as it is read.
type exchangeBody struct {
	r *serveRun
	x *exchange
}

func (b *exchangeBody) Write(p []byte) (int, error) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	return b.x.body.Write(p)
}

// event notes what an event on x's stream means for settling.
func (r *serveRun) event(x *exchange, ev frame.Event) {
	defer r.signal()
	r.mu.Lock()
	defer r.mu.Unlock()
	x.events++
	if ev.Type == "endpoint" {
		// HTTP+SSE: the stream names its session in the URL it gives.
		if u, err := url.Parse(string(ev.Data)); err == nil {
			if id := u.Query().Get("session"); id != "" {
				r.placeholder(id)
			}
		}
		return
	}
	m, err := frame.Parse(ev.Data)
	if err != nil {
		return
	}
	r.noteState(m)
	switch {
	case m.Kind().IsResponse() && x.req.method == http.MethodGet:
		r.answeredElsewhere(m.ID())
	case m.Kind().IsResponse():
		x.seen[m.ID()] = true
	case m.Kind() == frame.Request:
		x.asked = append(x.asked, m.ID())
	}
}

// answeredElsewhere notes a response to id on a GET stream (HTTP+SSE):
// it answers the oldest POST of a request with that id whose answer is
// not its own response (a 202, or none yet) and that has not had it. The
// caller holds r.mu.
func (r *serveRun) answeredElsewhere(id frame.ID) {
	for _, y := range r.exchanges {
		if y.req.method != http.MethodPost || y.sse || (y.gotHdr && y.status != http.StatusAccepted) || y.seen[id] {
			continue
		}
		if slices.Contains(y.await, id) {
			y.seen[id] = true
			return
		}
	}
}

// renderHeaders are the response headers a transcript shows (with every
// Mcp-* header), by their canonical keys: the ones that carry meaning for
// a client. Date and the like vary from run to run or say nothing about
// serve. An event stream's Content-Length is left out too: whether a
// stream goes out whole with a length or in chunks depends on when its
// messages arrive, not on what they are.
var renderHeaders = []string{
	"Access-Control-Allow-Headers", "Access-Control-Allow-Methods", "Access-Control-Allow-Origin",
	"Access-Control-Expose-Headers", "Access-Control-Max-Age",
	"Allow", "Cache-Control", "Connection", "Content-Length", "Content-Type", "Retry-After", "Vary", "Www-Authenticate",
}

// headerSpelling spells the canonical keys whose usual spelling differs.
var headerSpelling = map[string]string{"Www-Authenticate": "WWW-Authenticate"}

// renderHead renders a response's status line and headers, each line
// starting "< ", sorted, ending with a line "<". net/http takes
// "Connection: close" out of the headers it hands over (it closes the
// connection itself), so it is rendered from resp.Close. A session id it
// has not seen before gets the next placeholder. The caller holds r.mu.
func (r *serveRun) renderHead(resp *http.Response) string {
	var hdrs []string
	for name, values := range resp.Header {
		if !slices.Contains(renderHeaders, name) && !strings.HasPrefix(name, "Mcp-") {
			continue
		}
		if name == "Content-Length" && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			continue
		}
		spelling := name
		if s, ok := headerSpelling[name]; ok {
			spelling = s
		}
		for _, v := range values {
			if name == "Mcp-Session-Id" {
				v = r.placeholder(v)
			}
			hdrs = append(hdrs, spelling+": "+v)
		}
	}
	if resp.Close && resp.Header.Get("Connection") == "" {
		hdrs = append(hdrs, "Connection: close")
	}
	slices.Sort(hdrs)
	var b strings.Builder
	fmt.Fprintf(&b, "< %s\n", resp.Status)
	for _, h := range hdrs {
		fmt.Fprintf(&b, "< %s\n", h)
	}
	b.WriteString("<\n")
	return b.String()
}

// placeholder returns the placeholder standing for session id, minting
// $SESSION, $SESSION2, ... in order of first appearance. An id that names
// its replica (serve --replica-id) shows the replica: pod-0.$SESSION, and
// $SESSION then stands for its random part only, so that a request can
// name the same session under another replica's name. The caller holds
// r.mu.
func (r *serveRun) placeholder(id string) string {
	if shown, ok := r.ids[id]; ok {
		return shown
	}
	name := "$SESSION"
	if n := len(r.ids) + 1; n > 1 {
		name += strconv.Itoa(n)
	}
	shown, random := name, id
	if replica := mw.SessionReplica(id); replica != "" {
		shown, random = replica+"."+name, id[len(replica)+1:]
	}
	r.ids[id], r.byName[name] = shown, random
	return shown
}

// render writes every exchange in request order:
//
//	> POST /mcp tools/call id=2      what was sent (see requestLabel)
//	< 200 OK                         the status line
//	< Content-Type: ...              the headers that matter, sorted
//	<                                the end of the headers
//	...                              the body, byte for byte
//
// A body that does not end in a newline gets one (its Content-Length, when
// it has one, tells the real size). A request that got no response, or a
// body that broke off, adds a line "! <what happened>". The caller holds
// r.mu.
func (r *serveRun) render() []byte {
	var b bytes.Buffer
	for _, x := range r.exchanges {
		fmt.Fprintf(&b, "> %s\n", x.label)
		b.WriteString(x.head)
		body := x.body.Bytes()
		for id, name := range r.ids { // as named in an HTTP+SSE endpoint event
			body = bytes.ReplaceAll(body, []byte(id), []byte(name))
		}
		for state, name := range r.states {
			body = bytes.ReplaceAll(body, []byte(state), []byte(name))
		}
		b.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			b.WriteByte('\n')
		}
		if x.err != "" {
			fmt.Fprintf(&b, "! %s\n", x.err)
		}
	}
	return b.Bytes()
}

// requestLabel names a request in want/responses: its method and target
// and, for a POST, the shape of its body (as the relay's server script
// names them) and its raw id.
func requestLabel(req *serveRequest) string {
	label := req.method + " " + req.target
	if req.method != http.MethodPost {
		return label
	}
	label += " " + shapeOf(req.body)
	if id := gjson.GetBytes(req.body, "id"); id.Exists() && gjson.ValidBytes(req.body) {
		label += " id=" + id.Raw
	}
	return label
}

// requestIDs returns the raw ids of the requests in a POST body (one
// message or a batch).
func requestIDs(body []byte) []frame.ID {
	var ids []frame.ID
	eachMessage(body, func(m frame.Message) {
		if m.Kind() == frame.Request {
			ids = append(ids, m.ID())
		}
	})
	return ids
}

// responseIDs returns the raw ids of the responses in a POST body: answers
// to requests the server sent.
func responseIDs(body []byte) []frame.ID {
	var ids []frame.ID
	eachMessage(body, func(m frame.Message) {
		if m.Kind().IsResponse() {
			ids = append(ids, m.ID())
		}
	})
	return ids
}

// eachMessage calls f with the message a body holds, or with each element
// of a batch; bytes that are not JSON-RPC call nothing.
func eachMessage(body []byte, f func(frame.Message)) {
	m, err := frame.Parse(body)
	if err != nil {
		return
	}
	if m.Kind() != frame.Batch {
		f(m)
		return
	}
	m.Get("@this").ForEach(func(_, el gjson.Result) bool {
		if e, err := frame.Parse([]byte(el.Raw)); err == nil {
			f(e)
		}
		return true
	})
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// writeServeWants rewrites the want/responses and (when present or
// non-zero) want/exit sections of file from got, leaving every other byte
// of the archive as it was.
func writeServeWants(t *testing.T, file string, ar *txtar.Archive, got serveOutcome) {
	set := func(name string, data []byte) {
		for i := range ar.Files {
			if ar.Files[i].Name == name {
				ar.Files[i].Data = data
				return
			}
		}
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: data})
	}
	set(secWantResponses, got.responses)
	if section(ar, secWantExit) != nil || got.exit != 0 {
		set(secWantExit, []byte(strconv.Itoa(got.exit)+"\n"))
	}
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// zeros reads as an endless run of zero bytes: the random part of the ids
// serve mints toward its children is then the same in every run, so that
// transcripts can name them ("mcp-stdio/serve/AAAAAAAAAAAAAAAA/1").
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
