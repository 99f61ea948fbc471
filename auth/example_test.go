package auth_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// Example wires a Client the way the relay does: a Transport authorizes
// every request, a 401 goes to Unauthorized (mw.Reauth does this in the
// relay), and the request is sent once more. Here the first 401 finds no
// grant at all, so the sign-in runs in the foreground; authtest plays the
// authorization server and the user's browser.
func Example() {
	srv := authtest.Start(authtest.Options{ChallengeScope: "mcp:tools"})
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "mcp-stdio-example")
	defer os.RemoveAll(dir)

	c, err := auth.New(auth.Options{
		ServerURL: srv.MCPURL(),
		StorePath: filepath.Join(dir, "tokens.json"),
		Stderr:    io.Discard, // the sign-in URL is printed here
		OpenURL:   func(_ context.Context, u string) error { return authtest.Visit(u) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }() // background refresh and re-auth
	defer func() { cancel(); <-done }()

	hc := &http.Client{Transport: &auth.Transport{Source: c}}
	defer hc.CloseIdleConnections()
	call := func() *http.Response {
		body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		resp, err := hc.Post(srv.MCPURL(), "application/json", body)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	resp := call()
	fmt.Println("first attempt:", resp.StatusCode)
	retry, err := c.Unauthorized(ctx, c.Generation(), resp.Header)
	fmt.Println("retry:", retry, err)
	fmt.Println("second attempt:", call().StatusCode)
	for _, r := range srv.Requests() {
		if r.Path == "/authorize" {
			fmt.Println("scope asked for:", r.Query.Get("scope")) // from the challenge
		}
	}
	// Output:
	// first attempt: 401
	// retry: true <nil>
	// second attempt: 200
	// scope asked for: mcp:tools
}

// ExampleCanonicalResource shows the resource parameter and token store key
// of a server URL.
func ExampleCanonicalResource() {
	r, _ := auth.CanonicalResource("HTTPS://Example.COM:443/mcp?tenant=t1#section")
	fmt.Println(r)
	// Output: https://example.com/mcp?tenant=t1
}

// ExampleParseWWWAuthenticate reads what a 403 asks for.
func ExampleParseWWWAuthenticate() {
	cs := auth.ParseWWWAuthenticate([]string{`Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`})
	scope, _ := auth.ChallengeParam(cs, "scope")
	errCode, _ := auth.ChallengeParam(cs, "error")
	fmt.Println(cs[0].Scheme, errCode, scope)
	// Output: Bearer insufficient_scope files:read files:write
}

// FindOAuthMetadata tells, after a 401, whether the server publishes
// what an OAuth sign-in starts from: here its protected resource
// metadata, at the URL its challenge names.
func ExampleFindOAuthMetadata() {
	srv := authtest.Start(authtest.Options{})
	defer srv.Close()
	resp, err := http.Post(srv.MCPURL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	at, err := auth.FindOAuthMetadata(context.Background(), nil, srv.MCPURL(), resp.Header)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.StatusCode, strings.TrimPrefix(at, srv.URL))
	http.DefaultClient.CloseIdleConnections()
	// Output: 401 /.well-known/oauth-protected-resource/mcp
}

// ReservedAuthParam tells the parameters a sign-in sets itself, which
// Options.AuthParams may not replace, from those it may add.
func ExampleReservedAuthParam() {
	for _, name := range []string{"audience", "scope"} {
		why, reserved := auth.ReservedAuthParam(name)
		if !reserved {
			why = "may be added"
		}
		fmt.Printf("%s: %s\n", name, why)
	}
	// Output:
	// audience: may be added
	// scope: use --oauth-scope
}

// A CommandSource runs a command for the bearer token, as the relay's
// --bearer-token-command "gcloud auth print-access-token" does, and wires
// into the HTTP client through Transport (and into the relay's reauth
// stage, which runs the command again after a 401).
func ExampleNewCommandSource() {
	argv, cleanup := tokenPrinter("ya29.example-token") // e.g. {"gcloud", "auth", "print-access-token"}
	defer cleanup()
	src, err := auth.NewCommandSource(auth.CommandOptions{
		Argv: argv,
		Name: "--bearer-token-command",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := src.Fetch(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: &auth.Transport{Source: src}}
	_ = client // every request it sends carries Authorization: Bearer <token>
	tok, _ := src.BearerToken(context.Background())
	fmt.Println(len(tok) > 0, src.Generation())
	// Output: true 1
}

// tokenPrinter returns a command line that prints tok (this test binary
// as its "token-command" program, see main_test.go), and the function
// that removes its files.
func tokenPrinter(tok string) ([]string, func()) {
	dir, err := os.MkdirTemp("", "token-command")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(tok), 0o600); err != nil {
		panic(err)
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return []string{exe, "token-command", dir}, func() { os.RemoveAll(dir) }
}

// ExampleOptions_advice has a failed sign-in say what to do about it: the
// advice ends the warning the Client logs, and the error the sign-in
// returns carries none, for its caller to add its own.
func ExampleOptions_advice() {
	srv := httptest.NewTLSServer(http.NotFoundHandler()) // its certificate: no trusted authority signed it
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "mcp-stdio-example")
	defer os.RemoveAll(dir)
	var logged strings.Builder
	c, err := auth.New(auth.Options{
		ServerURL: srv.URL + "/mcp",
		StorePath: filepath.Join(dir, "tokens.json"),
		Stderr:    io.Discard,
		Logger:    slog.New(slog.NewTextHandler(&logged, nil)),
		Advice: func(err error) string {
			if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
				return "trust the server's CA with --ca-file PEM"
			}
			return ""
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = c.SignIn(context.Background())
	fmt.Println("the error advises:", strings.Contains(err.Error(), "--ca-file"))
	fmt.Println("the warning advises:", strings.Contains(logged.String(), "; trust the server's CA with --ca-file PEM"))
	// Output:
	// the error advises: false
	// the warning advises: true
}
