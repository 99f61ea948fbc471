package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// oauthEnv is the environment of a relay that signs in headlessly: $BROWSER
// is this test binary acting as a browser, tokens live in a temp dir.
func oauthEnv(t *testing.T) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return map[string]string{
		"BROWSER":         exe + " browser-helper",
		"XDG_CONFIG_HOME": dir,
		"HOME":            dir,
	}
}

// The relay signs in on the first 401 (discovery, registration, PKCE, the
// browser redirect), then carries the request, and later requests reuse the
// stored token.
func TestRelayOAuthSignInOnFirst401(t *testing.T) {
	is := is.New(t)
	as := authtest.NewServer(t, authtest.Options{})
	env := oauthEnv(t)
	pr, pw := io.Pipe()
	var out, errb transporttest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- cli.Relay(context.Background(), []string{"--oauth", "--transport", "streamable-http", as.MCPURL()},
			func(k string) string { return env[k] }, pr, &out, &errb, cli.Options{Version: "test"})
	}()
	io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	io.WriteString(pw, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`+"\n")
	pw.Close()
	is.NoErr(<-done)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	is.Equal(len(lines), 2)
	for _, l := range lines {
		is.True(strings.Contains(l, `"result":{}`)) // both answered by the protected server
	}
	is.True(strings.Contains(errb.String(), as.URL)) // the sign-in URL is printed on stderr
	for _, secret := range as.Secrets() {
		is.True(!strings.Contains(errb.String(), secret)) // tokens never in logs
		is.True(!strings.Contains(out.String(), secret))
	}
	store, err := os.ReadFile(filepath.Join(env["XDG_CONFIG_HOME"], "mcp-stdio", "tokens.json"))
	is.NoErr(err)
	is.True(bytes.Contains(store, []byte("access_token")))
}

func TestRelayOAuthFlagConflicts(t *testing.T) {
	is := is.New(t)
	code, _, errOut := runRelay(t, nil, "--oauth", "--bearer-token", "x", "http://a/mcp")
	is.Equal(code, cli.ExitUsage)
	is.True(strings.Contains(errOut, "mutually exclusive"))
	code, _, _ = runRelay(t, map[string]string{"MCP_BEARER_TOKEN": "x"}, "--oauth-device", "http://a/mcp")
	is.Equal(code, cli.ExitUsage)
	code, _, _ = runRelay(t, nil, "--oauth-scope", "a", "http://a/mcp")
	is.Equal(code, cli.ExitUsage)
}

// An identity provider that refuses RFC 8707's resource (Entra ID) and
// wants parameters of its own: the authorization request the browser
// stand-in follows carries every --oauth-param and no resource, and
// neither does the token request.
func TestRelayOAuthParamsWithoutResource(t *testing.T) {
	is := is.New(t)
	as := authtest.NewServer(t, authtest.Options{RefuseResource: true})
	env := oauthEnv(t)
	pr, pw := io.Pipe()
	var out, errb transporttest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- cli.Relay(context.Background(), []string{"--oauth", "--transport", "streamable-http",
			"--oauth-param", "access_type=offline", "--oauth-param", "audience=api://mcp", "--oauth-param", "prompt=consent",
			"--no-oauth-resource", as.MCPURL()},
			func(k string) string { return env[k] }, pr, &out, &errb, cli.Options{Version: "test"})
	}()
	io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	pw.Close()
	is.NoErr(<-done)
	is.True(strings.Contains(out.String(), `"result":{}`))
	var az, tok url.Values
	for _, r := range as.Requests() {
		switch r.Path {
		case "/authorize":
			az = r.Query
		case "/token":
			tok = r.Form
		}
	}
	is.Equal(az.Get("access_type"), "offline")
	is.Equal(az.Get("audience"), "api://mcp")
	is.Equal(az.Get("prompt"), "consent")
	is.True(!az.Has("resource"))
	is.True(tok != nil && !tok.Has("resource"))
}

// --oauth-param refuses what OAuth sets itself, a name given twice and a
// value without '=', each in one line naming the flag.
func TestRelayOAuthParamChecked(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--oauth", "--oauth-param", "scope=x"}, "--oauth-scope"},
		{[]string{"--oauth", "--oauth-param", "resource=x"}, "--no-oauth-resource"},
		{[]string{"--oauth", "--oauth-param", "state=x"}, "sets it"},
		{[]string{"--oauth", "--oauth-param", "a=1", "--oauth-param", "a=2"}, "given twice"},
		{[]string{"--oauth", "--oauth-param", "novalue"}, "NAME=VALUE"},
		{[]string{"--oauth-param", "a=1"}, "need --oauth"},
		{[]string{"--no-oauth-resource"}, "need --oauth"},
		{[]string{"--disable-resource-parameter"}, "--no-oauth-resource need --oauth"}, // mcp-remote's name
	} {
		code, _, errOut := runRelay(t, nil, append(c.args, "http://a/mcp")...)
		is.Equal(code, cli.ExitUsage)
		is.True(strings.Contains(errOut, c.want))
		is.Equal(strings.Count(strings.TrimSpace(errOut), "\n"), 0)
	}
}

// The OAuth requests trust --ca-file too: a server and its authorization
// server behind a private CA (the device grant, so no browser need trust
// it) sign the relay in with --ca-file, and without it the sign-in's
// failure names --ca-file.
func TestRelayOAuthWithCAFile(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	as := authtest.NewServer(t, authtest.Options{TLS: ca.ServerConfig(t, "127.0.0.1"), Device: true, DeviceInterval: 1})
	run := func(extra ...string) (string, string, error) {
		env := oauthEnv(t)
		var out, errb transporttest.SyncBuffer
		args := append([]string{"--oauth-device", "--oauth-eager", "--transport", "streamable-http"}, extra...)
		err := cli.Relay(context.Background(), append(args, as.MCPURL()), func(k string) string { return env[k] },
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n"), &out, &errb, cli.Options{Version: "test"})
		return out.String(), errb.String(), err
	}
	out, _, err := run("--ca-file", ca.WriteFile(t))
	is.NoErr(err)
	is.True(strings.Contains(out, `"result":{}`))
	is.True(as.Count("/token", "urn:ietf:params:oauth:grant-type:device_code") > 0)

	// Without it: stdin stays open until the eager sign-in has failed, so
	// that the relay's end cannot cut the sign-in short.
	env := oauthEnv(t)
	var outb, errb transporttest.SyncBuffer
	signInFailed := errb.Watch(regexp.MustCompile(`sign-in failed.*`))
	stdin, feed := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- cli.Relay(context.Background(), []string{"--oauth-device", "--oauth-eager", "--transport", "streamable-http", as.MCPURL()},
			func(k string) string { return env[k] }, stdin, &outb, &errb, cli.Options{Version: "test"})
	}()
	_, err = io.WriteString(feed, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	is.NoErr(err)
	line := signInFailed.Next(t, time.Minute)
	feed.Close()
	<-done
	is.True(strings.Contains(line[0], "--ca-file PEM")) // the sign-in's failure too
	is.True(strings.Contains(outb.String(), "--ca-file PEM"))

	// With a --ca-file that holds another CA, the sign-in's failure says
	// to check the file, as the request's does, not to pass it.
	var wrongOut, wrongErr transporttest.SyncBuffer
	signInFailed = wrongErr.Watch(regexp.MustCompile(`sign-in failed.*`))
	stdin, feed = io.Pipe()
	go func() {
		done <- cli.Relay(context.Background(), []string{"--oauth-device", "--oauth-eager", "--transport", "streamable-http", "--ca-file", transporttest.NewCA(t).WriteFile(t), as.MCPURL()},
			func(k string) string { return env[k] }, stdin, &wrongOut, &wrongErr, cli.Options{Version: "test"})
	}()
	_, err = io.WriteString(feed, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	is.NoErr(err)
	line = signInFailed.Next(t, time.Minute)
	feed.Close()
	<-done
	is.True(strings.Contains(line[0], "check that the file holds the CA that signs it"))
	is.True(!strings.Contains(line[0], "trust it with --ca-file"))
	is.True(strings.Contains(wrongOut.String(), "check that the file holds the CA that signs it"))
}
