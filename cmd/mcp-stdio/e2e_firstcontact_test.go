package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// First contact: what a user meets before anything works — a wrong URL, a
// missing token, a server command that does not exist, the help — seen
// the way the user sees it, through the built binary (issue 10).

// quickFailure bounds a failure that must be reported at once: well under
// the relay's retries and timeouts.
const quickFailure = 2 * time.Second

// testEnv is the environment of the binaries these tests run: the test
// process's own, without the variables that would change what they do.
func testEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MCP_BEARER_TOKEN", "MCP_STDIO_SERVE_TOKEN", "MCP_OAUTH_CLIENT_ID", "MCP_OAUTH_CLIENT_SECRET":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runBinary runs the built mcp-stdio with args to its end and returns its
// exit code, stdout and stderr, and how long it took.
func runBinary(t *testing.T, env []string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	cmd := exec.Command(relayBinary(t), args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String(), took
}

// serveURL matches serve's startup line.
var serveURL = regexp.MustCompile(`serving .* at (http://\S+)`)

// startServeBinary runs the built binary as `mcp-stdio serve` with args and
// returns its URL and stderr; it is killed at the end of the test.
func startServeBinary(t *testing.T, env []string, args ...string) (string, *transporttest.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(relayBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = env
	stderr := &transporttest.SyncBuffer{}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(stderr, pipe)
		stderr.Close()
		close(copied)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-copied
		cmd.Wait()
	})
	return stderr.Watch(serveURL).Next(t, testTimeout)[1], stderr
}

// --check against a live server that has no MCP endpoint at the path:
// the POST and the fallback GET are both refused, and the check says so
// at once with the status and the URL, instead of retrying the GET for
// ten seconds.
func TestCheckWrongURLFailsFast(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	url := srv.URL + "/wrong"
	code, stdout, stderr, took := runBinary(t, testEnv(), "--check", url)
	is.Equal(code, 1)
	is.Equal(stdout, "")
	is.True(took < quickFailure)
	is.True(strings.Contains(stderr, "✗ HTTP 404 from "+url))
	is.True(strings.Contains(stderr, "no MCP endpoint at this path"))
	is.True(!strings.Contains(stderr, "SSE connection failed")) // no retries
}

// --check of a refused connection is quick too: one attempt, no retries.
func TestCheckRefusedConnectionFailsFast(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/mcp"
	srv.Close()
	code, _, stderr, took := runBinary(t, testEnv(), "--check", url)
	is.Equal(code, 1)
	is.True(took < quickFailure)
	is.True(strings.Contains(stderr, "✗ cannot reach "+url+": connection refused"))
	is.True(strings.Contains(stderr, "check the host and port"))
	is.Equal(strings.Count(stderr, "WARN"), 0) // the ✗ line says it all
}

// --check against serve with a token, without one: the check names the
// environment variable (and the other ways) to give it, and not --oauth:
// serve with a static token publishes no OAuth metadata, which the relay
// looked for.
func TestCheckNamesTheTokenServeWants(t *testing.T) {
	is := is.New(t)
	url, _ := startServeBinary(t, testEnv("MCP_STDIO_SERVE_TOKEN=serve-secret-1234"), "--listen", "127.0.0.1:0")
	code, _, stderr, took := runBinary(t, testEnv(), "--check", url)
	is.Equal(code, 1)
	is.True(took < quickFailure)
	is.True(strings.Contains(stderr, "✗ HTTP 401 from "+url))
	is.True(strings.Contains(stderr, "WWW-Authenticate: Bearer"))
	is.True(strings.Contains(stderr, "MCP_BEARER_TOKEN"))
	is.True(strings.Contains(stderr, "--bearer-token"))
	is.True(!strings.Contains(stderr, "--oauth"))

	// With the token it connects.
	code, _, stderr, _ = runBinary(t, testEnv("MCP_BEARER_TOKEN=serve-secret-1234"), "--check", url)
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "✓ Connected"))
}

// As a relay in front of serve with a token, without one: the host's
// initialize, refused with serve's own "Unauthorized" JSON-RPC error, is
// answered with the explanation and the remedy that fits (the token, not
// --oauth: serve publishes no OAuth metadata there).
func TestRelayAnswersA401WithItsRemedy(t *testing.T) {
	is := is.New(t)
	url, _ := startServeBinary(t, testEnv("MCP_STDIO_SERVE_TOKEN=serve-secret-1234"), "--listen", "127.0.0.1:0")
	cmd := exec.Command(relayBinary(t), url)
	cmd.Env = testEnv()
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	_ = cmd.Run()
	is.True(time.Since(start) < quickFailure)
	answer := stdout.String()
	is.True(strings.HasPrefix(answer, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"HTTP 401 from `+url+`: the server wants credentials`))
	is.True(strings.Contains(answer, `the server said: \"Unauthorized: a valid bearer token is required\"`))
	is.True(strings.Contains(answer, "set MCP_BEARER_TOKEN (or pass --bearer-token)"))
	is.True(!strings.Contains(answer, "--oauth"))
}

// As a relay in front of serve --enable-oauth, without --oauth: serve
// publishes its protected resource metadata, which the relay finds, so
// the host's initialize is answered with a sign-in with --oauth as the
// remedy.
func TestRelayAnswersA401WithOAuthWhereItIsPublished(t *testing.T) {
	is := is.New(t)
	srv := startOAuthServe(t, "127.0.0.1:0")
	cmd := exec.Command(relayBinary(t), srv.url)
	cmd.Env = testEnv()
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	_ = cmd.Run()
	is.True(time.Since(start) < quickFailure)
	answer := stdout.String()
	is.True(strings.HasPrefix(answer, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"HTTP 401 from `+srv.url))
	is.True(strings.Contains(answer, "resource_metadata="))
	is.True(strings.Contains(answer, "the server publishes OAuth metadata: sign in with --oauth"))
}

// --transport sse against a Streamable HTTP endpoint: its GET without a
// session is refused with 400, and the check says so at once and what to
// change.
func TestCheckSSEAgainstStreamable(t *testing.T) {
	is := is.New(t)
	url, _ := startServeBinary(t, testEnv(), "--listen", "127.0.0.1:0")
	code, _, stderr, took := runBinary(t, testEnv(), "--check", "--transport", "sse", url)
	is.Equal(code, 1)
	is.True(took < quickFailure)
	is.True(strings.Contains(stderr, "✗ HTTP 400 from "+url+" to the HTTP+SSE GET"))
	is.True(strings.Contains(stderr, `the server said: "Bad Request: missing Mcp-Session-Id"`))
	is.True(strings.Contains(stderr, "leave out --transport sse"))
}

// As a relay, a wrong URL does not end the process: the host's
// initialize is answered with an error that says what is wrong, and so is
// every later request, until stdin closes; then the relay exits 1.
func TestRelayWrongURLAnswersInitializeAndStays(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	url := srv.URL + "/wrong"
	cmd := exec.Command(relayBinary(t), url)
	cmd.Env = testEnv()
	stdin, err := cmd.StdinPipe()
	is.NoErr(err)
	stdout, err := cmd.StdoutPipe()
	is.NoErr(err)
	stderr := &transporttest.SyncBuffer{}
	cmd.Stderr = stderr
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	out := bufio.NewScanner(stdout)

	start := time.Now()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`+"\n")
	is.True(out.Scan())
	is.True(time.Since(start) < quickFailure)
	answer := out.Text()
	is.True(strings.HasPrefix(answer, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"HTTP 404 from `+url))
	is.True(strings.Contains(answer, "no MCP endpoint at this path"))

	// Still there: a later request gets the same answer.
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	is.True(out.Scan())
	is.Equal(out.Text(), strings.Replace(answer, `"id":1`, `"id":2`, 1))

	stdin.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	is.True(errors.As(err, &ee))
	is.Equal(ee.ExitCode(), 1)
	is.True(strings.Contains(stderr.String(), "level=ERROR msg=\"cannot use the MCP server: HTTP 404 from "+url))
}

// firstAnswer bounds the answer to a host's initialize when nothing
// listens at the URL: the README's "the host is told at once".
const firstAnswer = time.Second

// As a relay, nothing listening at the URL: the host's first initialize
// is answered within firstAnswer (the era probe and the initialize, or
// the HTTP+SSE stream's first GET, are refused and not tried again: a
// server never reached is not waited for), with what is wrong and what
// to do; the relay stays until stdin closes.
func TestRelayRefusedServerAnswersInitializeAtOnce(t *testing.T) {
	for _, transport := range []string{"auto", "sse"} {
		t.Run(transport, func(t *testing.T) {
			is := is.New(t)
			srv := httptest.NewServer(http.NotFoundHandler())
			url := srv.URL + "/mcp"
			srv.Close() // nothing listens there now
			cmd := exec.Command(relayBinary(t), "--log-level", "debug", "--transport", transport, url)
			cmd.Env = testEnv()
			stdin, err := cmd.StdinPipe()
			is.NoErr(err)
			stdout, err := cmd.StdoutPipe()
			is.NoErr(err)
			stderr := &transporttest.SyncBuffer{}
			cmd.Stderr = stderr
			is.NoErr(cmd.Start())
			defer cmd.Process.Kill()
			// The relay has started once it logs; the bound is the answer's.
			stderr.Watch(regexp.MustCompile(`msg="relaying stdio"`)).Next(t, testTimeout)
			out := bufio.NewScanner(stdout)

			start := time.Now()
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`+"\n")
			is.True(out.Scan())
			took := time.Since(start)
			if took >= firstAnswer {
				t.Errorf("the initialize was answered after %v, want under %v", took, firstAnswer)
			}
			is.Equal(out.Text(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"cannot reach `+url+`: connection refused: nothing listens there; check the host and port, and that the server is running"}}`)
			is.True(!strings.Contains(stderr.String(), "msg=retrying"))
			is.True(!strings.Contains(stderr.String(), "reconnecting"))

			stdin.Close()
			_ = cmd.Wait()
		})
	}
}

// A server command that cannot run is refused at start, at once, with
// what to do — not served, to fail every session with a 502.
func TestServeRefusesACommandThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	notExec := dir + "/server.py"
	if err := os.WriteFile(notExec, []byte("print()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		command []string
		want    string
	}{
		{[]string{"/nonexistent"}, "cannot run the server command /nonexistent: no such file"},
		{[]string{"no-such-program-for-mcp-stdio", "--flag"}, "cannot run the server command no-such-program-for-mcp-stdio: not found in PATH"},
		{[]string{notExec}, "it is not executable; make it so (chmod +x " + notExec + ")"},
		{[]string{dir}, "it is a directory"},
	} {
		t.Run(tt.command[0], func(t *testing.T) {
			is := is.New(t)
			code, _, stderr, took := runBinary(t, testEnv(), append([]string{"serve", "--listen", "127.0.0.1:0", "--"}, tt.command...)...)
			is.Equal(code, 1)
			is.True(took < quickFailure)
			is.True(strings.HasPrefix(stderr, "mcp-stdio serve: "))
			is.True(strings.Contains(stderr, tt.want))
			is.Equal(strings.Count(stderr, "\n"), 1) // one line
			is.True(!strings.Contains(stderr, "serving"))
		})
	}
}

// The startup line names the address serve really bound and who can
// reach it: for --listen :0, all interfaces, and the warning stays.
func TestServeBannerNamesAllInterfaces(t *testing.T) {
	is := is.New(t)
	_, stderr := startServeBinary(t, testEnv(), "--listen", ":0")
	line := regexp.MustCompile(`mcp-stdio: serving the bundled example server on (\S+) \(all interfaces: reachable from the network\) at http://127\.0\.0\.1:(\d+)/mcp`).FindStringSubmatch(stderr.String())
	if line == nil {
		t.Fatalf("no startup line naming all interfaces:\n%s", stderr)
	}
	is.True(strings.HasSuffix(line[1], ":"+line[2])) // [::]:PORT or 0.0.0.0:PORT
	is.True(strings.Contains(stderr.String(), "listening beyond loopback without authentication"))
}

// The startup line quotes the command as a shell would, says loopback;
// a server that fails is a warning with its status and its stderr.
func TestServeBannerQuotesAndChildFailureIsWarned(t *testing.T) {
	is := is.New(t)
	url, stderr := startServeBinary(t, testEnv(), "--listen", "127.0.0.1:0", "--", "sh", "-c", `echo "it's broken: no config" >&2; exit 3`)
	is.True(strings.Contains(stderr.String(), `mcp-stdio: serving sh -c 'echo "it'\''s broken: no config" >&2; exit 3' on 127.0.0.1:`))
	is.True(strings.Contains(stderr.String(), "(loopback only) at "+url))

	warned := stderr.Watch(regexp.MustCompile(`level=WARN msg="server process exited with an error" .*status="exit status 3" stderr="it's broken: no config"`))
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	if resp, err := client.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	warned.Next(t, testTimeout)
}

// `mcp-stdio help [serve]` works like --help: the help on stdout, exit 0.
func TestHelpCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "usage: mcp-stdio [flags] URL\n"},
		{[]string{"--help"}, "usage: mcp-stdio [flags] URL\n"},
		{[]string{"help", "serve"}, "usage: mcp-stdio serve [flags] [-- CMD ARGS...]\n"},
		{[]string{"serve", "--help"}, "usage: mcp-stdio serve [flags] [-- CMD ARGS...]\n"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			code, stdout, stderr, _ := runBinary(t, testEnv(), tt.args...)
			is.Equal(code, 0)
			is.Equal(stderr, "")
			is.True(strings.HasPrefix(stdout, tt.want))
			is.True(strings.Contains(stdout, "\n  --log-level LEVEL\n"))
		})
	}
	is := is.New(t)
	code, stdout, stderr, _ := runBinary(t, testEnv(), "help", "nonsense")
	is.Equal(code, 2)
	is.Equal(stdout, "")
	is.True(strings.Contains(stderr, "try 'mcp-stdio help' or 'mcp-stdio help serve'"))
}

// --health-path answers probes before authentication; supergateway's
// --healthEndpoint is the same flag.
func TestServeHealthEndpoint(t *testing.T) {
	for _, flag := range []string{"--health-path", "--healthEndpoint"} {
		t.Run(flag, func(t *testing.T) {
			is := is.New(t)
			url, _ := startServeBinary(t, testEnv("MCP_STDIO_SERVE_TOKEN=serve-secret-1234"), "--listen", "127.0.0.1:0", flag, "/healthz")
			health := strings.TrimSuffix(url, "/mcp") + "/healthz"
			resp, err := http.Get(health)
			is.NoErr(err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, 200)
			is.Equal(string(body), "ok\n")
			resp, err = http.Get(url) // the endpoint still wants its token
			is.NoErr(err)
			resp.Body.Close()
			is.Equal(resp.StatusCode, 401)
			http.DefaultClient.CloseIdleConnections()
		})
	}
}

// A user coming from mcp-remote pastes its arguments: --transport
// http-only, --debug, a header with no space after the colon whose value
// comes from the environment, the callback port after the URL. The relay
// takes them as they are meant.
func TestRelayAliasesThroughTheBinary(t *testing.T) {
	is := is.New(t)
	var got http.Header
	seen := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"initialize"`) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
		seen <- struct{}{}
	}))
	defer srv.Close()
	cmd := exec.Command(relayBinary(t), srv.URL+"/mcp", "--transport", "http-only", "--debug", "--header", "Authorization:${AUTH_HEADER}")
	cmd.Env = testEnv("AUTH_HEADER=Bearer from-env-1234")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	is.NoErr(cmd.Run())
	<-seen
	is.Equal(got.Get("Authorization"), "Bearer from-env-1234")
	is.True(strings.Contains(stdout.String(), `"serverInfo":{"name":"s"`))
	is.True(strings.Contains(stderr.String(), "level=DEBUG"))               // --debug
	is.True(strings.Contains(stderr.String(), "transport=streamable-http")) // http-only
	is.True(!strings.Contains(stderr.String(), "plain http"))               // loopback

	// The callback port after the URL means OAuth, which a bearer token
	// excludes.
	code, _, errOut, _ := runBinary(t, testEnv("MCP_BEARER_TOKEN=tok"), srv.URL+"/mcp", "9696")
	is.Equal(code, 2)
	is.True(strings.Contains(errOut, "--oauth and --bearer-token"))
}
