package main_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A real OpenID provider for the resource-server tests: the oidc-provider
// package from npm, run by testdata/oidc/provider.mjs under Node.js 22
// (which oidc-provider 9 supports; both are installed with npm, as the
// conformance suite is, into the user cache directory, once).
const (
	oidcProviderVersion = "9.13.3"
	oidcProviderPackage = "oidc-provider@" + oidcProviderVersion
	// oidcSkipEnv set to 1 skips the tests against the real provider
	// explicitly (a machine without npm).
	oidcSkipEnv = "MCP_STDIO_SKIP_OIDC_PROVIDER"
	// The provider's clients: one asks for tokens (client credentials),
	// the other is serve's introspection client.
	oidcClientID, oidcClientSecret = "mcp-client", "mcp-client-secret"
	oidcRSID, oidcRSSecret         = "mcp-resource-server", "mcp-rs-secret"
)

// oidcInstall returns the directory of the installed oidc-provider package
// and the Node.js binary to run it with, installing both with npm into the
// user cache directory when no complete install is there yet (in a
// temporary directory renamed into place once complete, like
// confInstall).
func oidcInstall(t *testing.T) (pkgDir, node string) {
	t.Helper()
	if os.Getenv(oidcSkipEnv) == "1" {
		t.Skipf("%s=1", oidcSkipEnv)
	}
	nodePkg, err := confNodePackage()
	if err != nil {
		t.Skipf("the OpenID provider cannot run here: %v", err)
	}
	pkg := filepath.Join("node_modules", "oidc-provider")
	nodeRel := filepath.Join("node_modules", nodePkg, "bin", "node")
	dir := npmInstall{
		what:     "the OpenID provider",
		dir:      "oidc-provider-" + oidcProviderVersion + "-node" + confNodeMajor,
		packages: []string{nodePkg + "@" + confNodeMajor, oidcProviderPackage},
		files:    []string{filepath.Join(pkg, "lib", "index.js"), nodeRel},
		skipEnv:  oidcSkipEnv,
	}.ensure(t)
	return filepath.Join(dir, pkg), filepath.Join(dir, nodeRel)
}

// oidcProvider is a running testdata/oidc/provider.mjs.
type oidcProvider struct {
	issuer string
	kid    string // the signing key's id
	stdin  io.WriteCloser
	lines  chan string // its stdout, a line each
	http   *http.Client
}

// startOIDCProvider starts a provider issuing tokens for resource, and
// stops it when the test ends.
func startOIDCProvider(t *testing.T, resource string) *oidcProvider {
	t.Helper()
	pkgDir, node := oidcInstall(t)
	script, err := filepath.Abs(filepath.Join("testdata", "oidc", "provider.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(),
		"OIDC_PROVIDER_DIR="+pkgDir, "RESOURCE="+resource,
		"CLIENT_ID="+oidcClientID, "CLIENT_SECRET="+oidcClientSecret,
		"RS_ID="+oidcRSID, "RS_SECRET="+oidcRSSecret)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	p := &oidcProvider{lines: make(chan string, 16), http: &http.Client{Timeout: testTimeout}}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			// The package's own notices go to stdout too; ours are JSON.
			if strings.HasPrefix(s.Text(), "{") {
				p.lines <- s.Text()
			}
		}
	}()
	t.Cleanup(func() {
		p.stdin.Close() // the script ends when its stdin closes
		select {
		case <-done:
		case <-time.After(testTimeout):
			cmd.Process.Kill()
			<-done
		}
		cmd.Wait()
		p.http.CloseIdleConnections()
		if t.Failed() {
			t.Logf("the provider's stderr:\n%s", stderr.String())
		}
	})
	var ready struct{ Issuer, Kid string }
	p.next(t, &ready)
	p.issuer, p.kid = ready.Issuer, ready.Kid
	return p
}

// next decodes the provider's next stdout line into v.
func (p *oidcProvider) next(t *testing.T, v any) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatal("the OpenID provider ended")
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("the OpenID provider said %q: %v", line, err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the OpenID provider said nothing in time")
	}
}

// rotate swaps the provider's signing key for a new one (the old one
// leaves its JWKS) and returns the new key's id.
func (p *oidcProvider) rotate(t *testing.T) string {
	t.Helper()
	if _, err := io.WriteString(p.stdin, "rotate\n"); err != nil {
		t.Fatal(err)
	}
	var r struct{ Kid string }
	p.next(t, &r)
	if r.Kid == "" || r.Kid == p.kid {
		t.Fatalf("the rotation gave key %q after %q", r.Kid, p.kid)
	}
	p.kid = r.Kid
	return r.Kid
}

// token gets an access token for resource with the client credentials
// grant; opaque asks for an opaque token rather than a JWT.
func (p *oidcProvider) token(t *testing.T, resource string, opaque bool) string {
	t.Helper()
	u := p.issuer + "/token"
	if opaque {
		u += "?format=opaque"
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {"mcp:tools"}}
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(oidcClientID, oidcClientSecret)
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		t.Fatalf("token request: %d %s", resp.StatusCode, body)
	}
	return tr.AccessToken
}

// jwtKid returns the kid of a JWT's header, for checking which key signed.
func jwtKid(t *testing.T, token string) string {
	t.Helper()
	var h struct{ Kid string }
	if err := decodeJWTPart(strings.Split(token, ".")[0], &h); err != nil {
		t.Fatalf("not a JWT: %v", err)
	}
	return h.Kid
}

func decodeJWTPart(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	return nil
}
