package main_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// oauthRelay is the built relay run with --oauth against a loopback
// authorization server, driven line by line over its stdin and stdout. The
// "browser" is this test binary (see conformance_client_test.go), which
// follows the authorization redirect the way a user's browser would.
type oauthRelay struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *transporttest.SyncBuffer
	done   chan error
}

// startOAuthRelay starts the relay with --oauth for srv's MCP endpoint,
// keeping its tokens in store (an XDG_CONFIG_HOME) so that several relays
// can share one store.
func startOAuthRelay(t *testing.T, srv *authtest.Server, store string, extra ...string) *oauthRelay {
	t.Helper()
	bin := relayBinary(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--oauth", "--transport", "streamable-http", "--log-level", "debug"}, extra...)
	cmd := exec.Command(bin, append(args, srv.MCPURL())...)
	cmd.Env = append(os.Environ(),
		"BROWSER="+exe+" "+confBrowserArg,
		"XDG_CONFIG_HOME="+store,
		"HOME="+store,
	)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &oauthRelay{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &transporttest.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		r.stdin.Close()
		if err := <-r.done; err != nil {
			t.Errorf("relay exit: %v\nstderr:\n%s", err, r.stderr)
		}
	})
	return r
}

// call writes one request line and returns the next message the relay
// prints (the tests send one request at a time).
func (r *oauthRelay) call(t *testing.T, id int, method string) frame.Message {
	t.Helper()
	fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`+"\n", id, method)
	line, err := r.stdout.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading the answer to %s: %v\nstderr:\n%s", method, err, r.stderr)
	}
	m, err := frame.Parse(line)
	if err != nil {
		t.Fatalf("bad answer %q: %v", line, err)
	}
	return m
}

// A token the server stops accepting in the middle of a session, on a
// tools/call (not initialize): the relay refreshes once and retries, and
// the client never sees the 401.
func TestRelayOAuthRefreshesOn401MidSession(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	r := startOAuthRelay(t, srv, t.TempDir())
	is.Equal(r.call(t, 1, "tools/list").Kind(), frame.Result) // signs in on the first 401
	is.Equal(srv.Count("/authorize", ""), 1)

	srv.RevokeAccessTokens()
	m := r.call(t, 2, "tools/call")
	is.Equal(m.String(), `{"jsonrpc":"2.0","id":2,"result":{}}`)
	is.Equal(srv.Count("/token", "refresh_token"), 1)
	is.Equal(srv.Count("/authorize", ""), 1) // no second sign-in
}

// Two relay processes share one token store. The second one adopts the
// first one's sign-in; when the server rejects the token, both refresh at
// once, and the rotating refresh token is spent exactly once: the process
// that loses the race adopts the winner's new token.
func TestRelayOAuthTwoProcessesShareOneRotatingGrant(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	store := t.TempDir()
	a := startOAuthRelay(t, srv, store)
	is.Equal(a.call(t, 1, "tools/list").Kind(), frame.Result)
	b := startOAuthRelay(t, srv, store)
	is.Equal(b.call(t, 1, "tools/list").Kind(), frame.Result)
	is.Equal(srv.Count("/authorize", ""), 1) // b took a's token from the store

	srv.RevokeAccessTokens()
	var wg sync.WaitGroup
	answers := make([]frame.Message, 2)
	for i, r := range []*oauthRelay{a, b} {
		wg.Go(func() { answers[i] = r.call(t, 2, "tools/call") })
	}
	wg.Wait()
	for _, m := range answers {
		is.Equal(m.String(), `{"jsonrpc":"2.0","id":2,"result":{}}`)
	}
	is.Equal(srv.Count("/token", "refresh_token"), 1) // one spend of the rotating refresh token
	is.Equal(srv.Count("/authorize", ""), 1)
}

// A revoked grant (the refresh token refused too) is signed in again in the
// background: the call that met it, and the calls made meanwhile, are
// answered at once with -32002 instead of hanging, and once the sign-in is
// done calls go through again.
func TestRelayOAuthRevokedGrantReauthorisesInBackground(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	r := startOAuthRelay(t, srv, t.TempDir())
	is.Equal(r.call(t, 1, "tools/list").Kind(), frame.Result)
	signIns := r.stderr.Watch(regexp.MustCompile(`oauth: signed in`))
	signIns.Next(t, testTimeout) // the first sign-in

	srv.RevokeAccessTokens()
	srv.RevokeRefreshTokens()
	m := r.call(t, 2, "tools/call")
	code, _ := m.ErrorCode()
	is.Equal(code, frame.CodeReauthorizing) // answered at once: retry later
	is.Equal(m.ID(), frame.ID("2"))

	signIns.Next(t, testTimeout) // signed in again, in the background
	is.Equal(r.call(t, 3, "tools/call").String(), `{"jsonrpc":"2.0","id":3,"result":{}}`)
	is.Equal(srv.Count("/authorize", ""), 2)
}

// --oauth-device signs in with the device grant: the code is printed on
// stderr, the relay polls the token endpoint (pending, then granted), and
// the request goes through.
func TestRelayOAuthDeviceGrant(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{Device: true, DevicePending: 1, DeviceInterval: 1})
	r := startOAuthRelay(t, srv, t.TempDir(), "--oauth-device")
	is.Equal(r.call(t, 1, "tools/list").String(), `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.True(strings.Count(r.stderr.String(), "and enter the code") == 1)
	is.Equal(srv.Count("/authorize", ""), 0)
	is.Equal(srv.Count("/token", "urn:ietf:params:oauth:grant-type:device_code"), 2) // pending, then granted
}
