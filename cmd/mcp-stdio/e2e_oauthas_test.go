package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The relay signs in to `mcp-stdio serve --enable-oauth`, both the built
// binary: the test plays the person, who reads the one-time code on
// serve's stderr and types it on the consent page (the browser the relay
// opens is this test binary, consentBrowserArg, which reads the code from
// a file the test writes).

const (
	// consentBrowserArg runs this test binary as the person's browser:
	// it loads the consent page, types the code and follows the redirect.
	consentBrowserArg = "mcp-stdio-consent-browser"
	// signInCodeFileEnv names the file holding the code to type.
	signInCodeFileEnv = "MCP_STDIO_TEST_SIGNIN_CODE_FILE"
)

func init() {
	transporttest.RunProgram(map[string]func(args []string) int{consentBrowserArg: consentBrowser})
}

var signInCodeLine = regexp.MustCompile(`OAuth sign-in code, .*: (\S+)$`)

// consentBrowser loads the authorization URL, answers the consent form
// with the code in $MCP_STDIO_TEST_SIGNIN_CODE_FILE, and follows the
// redirect to the client's callback.
func consentBrowser(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "consent browser: usage: browser URL")
		return 2
	}
	if err := consent(args[0], os.Getenv(signInCodeFileEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "consent browser:", err)
		return 1
	}
	return 0
}

var (
	formRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)
	formCSRF    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

func consent(authURL, codeFile string) error {
	code, err := os.ReadFile(codeFile)
	if err != nil {
		return err
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(authURL)
	if err != nil {
		return err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	req, csrf := formRequest.FindSubmatch(page), formCSRF.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || req == nil || csrf == nil {
		return fmt.Errorf("no consent page: %d %s", resp.StatusCode, page)
	}
	u, _ := url.Parse(authURL)
	form := url.Values{"request": {string(req[1])}, "csrf": {string(csrf[1])}, "code": {strings.TrimSpace(string(code))}, "action": {"approve"}}
	post, _ := http.NewRequest(http.MethodPost, u.Scheme+"://"+u.Host+"/authorize", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err = c.Do(post) // follows the 303 to the client's callback
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Host == u.Host {
		return fmt.Errorf("consent answered %d at %s: %s", resp.StatusCode, resp.Request.URL.Redacted(), body)
	}
	return nil
}

// oauthServe is `mcp-stdio serve --enable-oauth` running.
type oauthServe struct {
	cmd    *exec.Cmd
	stderr *transporttest.SyncBuffer
	url    string
	codes  *transporttest.LineWatch
	done   chan struct{}
}

// startOAuthServe runs serve with the bundled example server on listen.
func startOAuthServe(t *testing.T, listen string, args ...string) *oauthServe {
	t.Helper()
	s := &oauthServe{stderr: &transporttest.SyncBuffer{}, done: make(chan struct{})}
	s.codes = s.stderr.Watch(signInCodeLine)
	s.cmd = exec.Command(relayBinary(t), append([]string{"serve", "--listen", listen, "--log-level", "debug", "--enable-oauth"}, args...)...)
	s.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", s.stderr)
		}
	})
	s.url = s.stderr.Watch(serveURLRe).Next(t, testTimeout)[1]
	return s
}

var serveURLRe = regexp.MustCompile(`serving .* at (http://\S+)`)

// stop interrupts serve and waits for it.
func (s *oauthServe) stop(t *testing.T) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(testTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Error("serve did not stop on interrupt")
	}
}

// nextCode returns the next one-time code serve prints.
func (s *oauthServe) nextCode(t *testing.T) string {
	t.Helper()
	return s.codes.Next(t, testTimeout)[1]
}

// origin is serve's origin, the issuer.
func (s *oauthServe) origin() string { return strings.TrimSuffix(s.url, "/mcp") }

// startRelayFor starts the relay with --oauth for url; its browser types
// the code in codeFile.
func startRelayFor(t *testing.T, mcpURL, store, codeFile string) *oauthRelay {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(relayBinary(t), "--oauth", "--transport", "streamable-http", "--log-level", "debug", mcpURL)
	cmd.Env = append(os.Environ(),
		"BROWSER="+exe+" "+consentBrowserArg,
		signInCodeFileEnv+"="+codeFile,
		"XDG_CONFIG_HOME="+store,
		"HOME="+store,
		"GORACE=atexit_sleep_ms=0",
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
		if t.Failed() {
			t.Logf("relay's stderr:\n%s", r.stderr)
		}
	})
	return r
}

// send writes one line and, for a request, returns the relay's answer to
// it (messages without its id are skipped).
func (r *oauthRelay) send(t *testing.T, id, line string) frame.Message {
	t.Helper()
	fmt.Fprintln(r.stdin, line)
	if id == "" {
		return frame.Message{}
	}
	for {
		b, err := r.stdout.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the answer to %s: %v", line, err)
		}
		m, err := frame.Parse(b)
		if err != nil {
			t.Fatalf("bad answer %q: %v", b, err)
		}
		if m.ID() == frame.ID(id) {
			return m
		}
	}
}

func echo(id int, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, text)
}

// relayStore reads the relay's stored grant for serve: its access and
// refresh tokens and client id.
func relayStore(t *testing.T, store string) (access, refresh, client string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, "mcp-stdio", "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries map[string]struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ClientID     string `json:"client_id"`
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("want one entry in the relay's store, got %d", len(entries))
	}
	for _, e := range entries {
		return e.AccessToken, e.RefreshToken, e.ClientID
	}
	return
}

// revoke revokes a token at serve's revocation endpoint.
func revoke(t *testing.T, origin, token, client string) {
	t.Helper()
	resp, err := http.PostForm(origin+"/revoke", url.Values{"token": {token}, "client_id": {client}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
}

// statusWith returns the status of an initialize presented with token.
func statusWith(t *testing.T, mcpURL, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The relay signs in to serve's own authorization server (DCR, consent
// with the one-time code), calls a tool, goes on across a restart of serve
// (its --token-store keeps the sign-in), refreshes when its access token
// is revoked, and after the grant is revoked is refused and signs in again.
func TestRelaySignsInToServeEnableOAuth(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	asStore := filepath.Join(dir, "as.json")
	codeFile := filepath.Join(dir, "code")
	relayStoreDir := filepath.Join(dir, "relay")
	srv := startOAuthServe(t, "127.0.0.1:0", "--token-store", asStore)
	is.NoErr(os.WriteFile(codeFile, []byte(srv.nextCode(t)), 0o600))

	r := startRelayFor(t, srv.url, relayStoreDir, codeFile)
	signIns := r.stderr.Watch(regexp.MustCompile(`oauth: signed in`))
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	is.Equal(r.send(t, "1", init).Kind(), frame.Result) // signs in on the first 401
	signIns.Next(t, testTimeout)
	r.send(t, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.True(strings.Contains(r.send(t, "2", echo(2, "hello")).String(), "hello"))
	is.NoErr(os.WriteFile(codeFile, []byte(srv.nextCode(t)), 0o600)) // the spent code was replaced

	fi, err := os.Stat(asStore)
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	access, refresh, client := relayStore(t, relayStoreDir)
	raw, err := os.ReadFile(asStore)
	is.NoErr(err)
	is.True(!strings.Contains(string(raw), access) && !strings.Contains(string(raw), refresh)) // hashes only

	// A restart on the same address: the token still works (the relay
	// only opens a new session).
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.origin(), "http://"))
	srv.stop(t)
	srv = startOAuthServe(t, "127.0.0.1:"+port, "--token-store", asStore)
	is.NoErr(os.WriteFile(codeFile, []byte(srv.nextCode(t)), 0o600))
	is.True(strings.Contains(r.send(t, "3", echo(3, "after restart")).String(), "after restart"))
	is.Equal(strings.Count(r.stderr.String(), "oauth: signed in"), 1) // no second sign-in

	// The access token revoked: the relay refreshes (rotating) and goes on.
	revoke(t, srv.origin(), access, client)
	is.Equal(statusWith(t, srv.url, access), http.StatusUnauthorized)
	is.True(strings.Contains(r.send(t, "4", echo(4, "refreshed")).String(), "refreshed"))
	access2, refresh2, _ := relayStore(t, relayStoreDir)
	is.True(access2 != access && refresh2 != refresh)
	is.Equal(strings.Count(r.stderr.String(), "oauth: signed in"), 1)

	// The grant revoked: refused (the relay answers -32002 while it signs
	// in again in the background), then back with a new sign-in.
	revoke(t, srv.origin(), refresh2, client)
	is.Equal(statusWith(t, srv.url, access2), http.StatusUnauthorized)
	m := r.send(t, "5", echo(5, "revoked"))
	code, _ := m.ErrorCode()
	is.Equal(code, frame.CodeReauthorizing)
	signIns.Next(t, testTimeout)
	is.True(strings.Contains(r.send(t, "6", echo(6, "signed in again")).String(), "signed in again"))
}

// The one-time code is required: a browser that types a wrong one gets no
// code, and the relay's sign-in fails.
func TestServeEnableOAuthRefusesWrongSignInCode(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	srv := startOAuthServe(t, "127.0.0.1:0")
	srv.nextCode(t)
	codeFile := filepath.Join(dir, "code")
	is.NoErr(os.WriteFile(codeFile, []byte("AAAA-AAAA-AAAA"), 0o600))
	// Register as a client would, then run the browser by hand.
	resp, err := http.Post(srv.origin()+"/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`))
	is.NoErr(err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&reg))
	resp.Body.Close()
	q := url.Values{
		"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {"http://127.0.0.1:1/cb"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
		"resource": {srv.url}, "state": {"s"},
	}
	err = consent(srv.origin()+"/authorize?"+q.Encode(), codeFile)
	is.True(err != nil && strings.Contains(err.Error(), "consent answered 403"))
	is.True(!errors.Is(err, os.ErrNotExist))
}

// go-sdk's OAuth client (auth.AuthorizationCodeHandler: discovery, DCR,
// PKCE, RFC 9207 iss, resource) signs in to serve --enable-oauth, its
// fetcher playing the person, and calls a tool.
func TestGoSDKClientSignsInToServeEnableOAuth(t *testing.T) {
	is := is.New(t)
	srv := startOAuthServe(t, "127.0.0.1:0")
	code := srv.nextCode(t)
	const redirect = "http://127.0.0.1:1/callback" // never visited: the fetcher reads the Location
	var visits int
	handler, err := sdkauth.NewAuthorizationCodeHandler(&sdkauth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &sdkauth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ClientName:              "go-sdk e2e",
		}},
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
			visits++
			loc, err := consentLocation(args.URL, code)
			if err != nil {
				return nil, err
			}
			q := loc.Query()
			return &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	is.NoErr(err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url, OAuthHandler: handler}, nil)
	is.NoErr(err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "from go-sdk"}})
	is.NoErr(err)
	is.True(strings.Contains(resultText(res), "from go-sdk"))
	is.Equal(visits, 1)
}

// consentLocation answers the consent page at authURL with code, without
// following the redirect, and returns where it sends the browser.
func consentLocation(authURL, code string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	req, csrf := formRequest.FindSubmatch(page), formCSRF.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || req == nil || csrf == nil {
		return nil, fmt.Errorf("no consent page: %d %s", resp.StatusCode, page)
	}
	u, _ := url.Parse(authURL)
	form := url.Values{"request": {string(req[1])}, "csrf": {string(csrf[1])}, "code": {code}, "action": {"approve"}}
	post, _ := http.NewRequest(http.MethodPost, u.Scheme+"://"+u.Host+"/authorize", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = c.Do(post)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("consent answered %d", resp.StatusCode)
	}
	return url.Parse(resp.Header.Get("Location"))
}
