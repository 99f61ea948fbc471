package auth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

func newTestStore(t *testing.T) *tokenStore {
	return &tokenStore{
		path:     filepath.Join(t.TempDir(), "cfg", "mcp-stdio", "tokens.json"),
		log:      slog.New(slog.DiscardHandler),
		clock:    newFakeClock(),
		lockWait: 5 * time.Second,
	}
}

func put(t *testing.T, s *tokenStore, key string, e *storeEntry) {
	t.Helper()
	err := s.update(context.Background(), key, func(*storeEntry) (*storeEntry, bool, error) { return e, true, nil })
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreRoundTripAndPermissions(t *testing.T) {
	is := is.New(t)
	s := newTestStore(t)
	exp := 1785240000.5
	put(t, s, "https://a.example/mcp", &storeEntry{AccessToken: "A", RefreshToken: "R", ExpiresAt: &exp, Issuer: "https://as"})
	put(t, s, "https://b.example/mcp", &storeEntry{AccessToken: "B"})

	e, err := s.load("https://a.example/mcp")
	is.NoErr(err)
	is.Equal(e.AccessToken, "A")
	is.Equal(e.RefreshToken, "R")
	is.Equal(e.token().Expiry, time.Unix(1785240000, 500_000_000))
	e, err = s.load("https://nope.example")
	is.NoErr(err)
	is.True(e == nil)

	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Dir(s.path))
		is.NoErr(err)
		is.Equal(fi.Mode().Perm(), fs.FileMode(0o700)) // directory private
		fi, err = os.Stat(s.path)
		is.NoErr(err)
		is.Equal(fi.Mode().Perm(), fs.FileMode(0o600)) // file private
	}
	// No temp file is left behind.
	names, err := os.ReadDir(filepath.Dir(s.path))
	is.NoErr(err)
	for _, n := range names {
		is.True(!strings.Contains(n.Name(), ".tmp-")) // temp file left
	}
}

func TestStoreTightensLoosePermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX permissions")
	}
	is := is.New(t)
	s := newTestStore(t)
	put(t, s, "k", &storeEntry{AccessToken: "A"})
	is.NoErr(os.Chmod(filepath.Dir(s.path), 0o755))
	is.NoErr(os.Chmod(s.path, 0o644))
	_, err := s.load("k")
	is.NoErr(err)
	fi, _ := os.Stat(s.path)
	is.Equal(fi.Mode().Perm(), fs.FileMode(0o600))
	put(t, s, "k", &storeEntry{AccessToken: "B"})
	fi, _ = os.Stat(filepath.Dir(s.path))
	is.Equal(fi.Mode().Perm(), fs.FileMode(0o700))
}

func TestStoreKeepsUnknownAndOtherEntries(t *testing.T) {
	is := is.New(t)
	s := newTestStore(t)
	is.NoErr(os.MkdirAll(filepath.Dir(s.path), 0o700))
	// A store written by mcp-stdio 0.8.0 (exact member names), with a
	// member this version does not know, and an entry of another shape.
	old := `{
  "https://a.example/mcp": {"access_token": "A", "token_type": "Bearer", "expires_at": null,
    "refresh_token": "R", "scope": null, "client_id": "cid", "client_secret": null,
    "client_secret_expires_at": null, "token_endpoint": "https://as/token",
    "authorization_endpoint": "https://as/authorize", "registration_endpoint": null,
    "future_field": {"x": 1}},
  "https://other.example": {"whatever": [1, 2, 3]}
}`
	is.NoErr(os.WriteFile(s.path, []byte(old), 0o600))
	e, err := s.load("https://a.example/mcp")
	is.NoErr(err)
	is.Equal(e.AccessToken, "A")
	is.Equal(e.ClientID, "cid")
	is.True(e.token().Expiry.IsZero()) // null expires_at: never

	put(t, s, "https://a.example/mcp", &storeEntry{AccessToken: "A2"})
	b, err := os.ReadFile(s.path)
	is.NoErr(err)
	var m map[string]json.RawMessage
	is.NoErr(json.Unmarshal(b, &m))
	var other bytes.Buffer
	is.NoErr(json.Compact(&other, m["https://other.example"]))
	is.Equal(other.String(), `{"whatever":[1,2,3]}`) // other entries kept
}

func TestStoreCorruptFileIsKept(t *testing.T) {
	is := is.New(t)
	s := newTestStore(t)
	var logs transporttest.SyncBuffer
	s.log = slog.New(slog.NewTextHandler(&logs, nil))
	is.NoErr(os.MkdirAll(filepath.Dir(s.path), 0o700))
	garbage := []byte(`{"https://a.example/mcp": {"access_token": "A"` + "\x00 truncated")
	is.NoErr(os.WriteFile(s.path, garbage, 0o600))

	_, err := s.load("https://a.example/mcp")
	is.True(errors.Is(err, errStoreCorrupt)) // reported, not silently empty

	put(t, s, "https://a.example/mcp", &storeEntry{AccessToken: "new"})
	matches, err := filepath.Glob(s.path + ".corrupt-*")
	is.NoErr(err)
	is.Equal(len(matches), 1) // the corrupt file was moved aside
	kept, err := os.ReadFile(matches[0])
	is.NoErr(err)
	is.Equal(kept, garbage) // byte for byte
	e, err := s.load("https://a.example/mcp")
	is.NoErr(err)
	is.Equal(e.AccessToken, "new")
	is.True(strings.Contains(logs.String(), "corrupt")) // and logged
}

func TestStoreCompareAndDelete(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour})
	h := newHarness(t, srv, nil)
	ctx := context.Background()
	is.NoErr(h.c.SignIn(ctx))
	e, err := h.c.store.load(h.c.resource)
	is.NoErr(err)
	dead := e.RefreshToken

	// The store holds a grant (here: one a sibling rotated to) that the
	// server revokes. Refreshing spends the stored refresh token, which
	// fails for good: the store still holds exactly that refresh token, so
	// its tokens go.
	at2, rt2 := srv.IssueToken(e.ClientID, "", e.Resource)
	put(t, h.c.store, h.c.resource, func() *storeEntry { n := *e; n.AccessToken, n.RefreshToken = at2, rt2; return &n }())
	srv.RevokeRefreshTokens()
	err = h.c.refresh(ctx, at2, false)
	is.True(isDeadGrant(err))
	is.Equal(srv.Count("/token", "refresh_token"), 1)
	e, err = h.c.store.load(h.c.resource)
	is.NoErr(err)
	is.Equal(e.RefreshToken, "") // deleted: it was the one that failed
	is.Equal(e.AccessToken, "")
	is.True(e.ClientID != "") // the registration is kept (mcp-remote#256)
	_ = dead

	// A grant that died in this process while a sibling already stored a
	// newer one: the newer one stays.
	put(t, h.c.store, h.c.resource, func() *storeEntry { n := *e; n.AccessToken, n.RefreshToken = "fresh-at", "fresh-rt"; return &n }())
	h.c.forgetGrant(ctx, Token{AccessToken: "old-at", RefreshToken: "old-rt"})
	e, err = h.c.store.load(h.c.resource)
	is.NoErr(err)
	is.Equal(e.RefreshToken, "fresh-rt") // compare-and-delete kept the newer grant
}

func TestDefaultStorePath(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	p, err := DefaultStorePath(getenv)
	is.NoErr(err)
	is.Equal(p, filepath.Join("/home/u", ".config", "mcp-stdio", "tokens.json"))

	env["XDG_CONFIG_HOME"] = "/xdg"
	p, err = DefaultStorePath(getenv)
	is.NoErr(err)
	is.Equal(p, filepath.Join("/xdg", "mcp-stdio", "tokens.json"))

	env["XDG_CONFIG_HOME"] = "relative/ignored" // the XDG spec says ignore it
	p, err = DefaultStorePath(getenv)
	is.NoErr(err)
	is.Equal(p, filepath.Join("/home/u", ".config", "mcp-stdio", "tokens.json"))
}

func TestClientUsesXDGConfigHome(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	xdg := t.TempDir()
	h := newHarness(t, srv, func(o *Options) {
		o.StorePath = ""
		o.Getenv = func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return xdg
			}
			return ""
		}
	})
	is.NoErr(h.c.SignIn(context.Background()))
	_, err := os.Stat(filepath.Join(xdg, "mcp-stdio", "tokens.json"))
	is.NoErr(err) // the token landed under XDG_CONFIG_HOME
}

// TestTwoProcessesShareOneRefresh runs the test binary twice as real relay
// processes racing to refresh the same rotating refresh token from one
// store. Exactly one refresh_token request may reach the authorization
// server, and both processes must end with the rotated token.
func TestTwoProcessesShareOneRefresh(t *testing.T) {
	if !fileLocking {
		t.Skip("no file locks on this platform")
	}
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour})
	h := newHarness(t, srv, func(o *Options) { o.Clock = nil })
	is.NoErr(h.c.SignIn(context.Background()))
	first, err := h.c.store.load(h.c.resource)
	is.NoErr(err)

	held, release := srv.HoldNextRefresh()
	defer release()
	type child struct {
		cmd  *exec.Cmd
		out  *bufio.Reader
		done chan error
	}
	var children []child
	for i := 0; i < 2; i++ {
		cmd := transporttest.Command("refresh")
		cmd.Env = append(cmd.Env,
			"MCP_STDIO_AUTH_STORE="+h.store,
			"MCP_STDIO_AUTH_SERVER="+srv.MCPURL(),
			"MCP_STDIO_AUTH_CHALLENGE="+srv.Challenge(),
		)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		is.NoErr(err)
		is.NoErr(cmd.Start())
		c := child{cmd: cmd, out: bufio.NewReader(stdout), done: make(chan error, 1)}
		children = append(children, c)
	}
	for _, c := range children {
		line, err := c.out.ReadString('\n')
		is.NoErr(err)
		is.Equal(line, "ready\n")
	}
	<-held // one of them is at the authorization server; the other races for the lock
	release()
	var finals []string
	for _, c := range children {
		rest, err := io.ReadAll(c.out)
		is.NoErr(err)
		is.NoErr(c.cmd.Wait())
		finals = append(finals, strings.TrimSpace(string(rest)))
	}
	is.Equal(srv.Count("/token", "refresh_token"), 1) // the refresh token was spent once
	last, err := h.c.store.load(h.c.resource)
	is.NoErr(err)
	is.True(last.RefreshToken != first.RefreshToken) // it was rotated
	is.Equal(finals[0], last.AccessToken)            // both processes hold the rotated token
	is.Equal(finals[1], last.AccessToken)
	is.True(srv.ValidAccessToken(last.AccessToken))
}

// refreshChild is one process of TestTwoProcessesShareOneRefresh: it loads
// the shared store, reports ready, meets a 401 (which refreshes under the
// store's lock) and prints the token it ends with.
func refreshChild() int {
	c, err := New(Options{
		ServerURL: os.Getenv("MCP_STDIO_AUTH_SERVER"),
		StorePath: os.Getenv("MCP_STDIO_AUTH_STORE"),
		Stderr:    io.Discard,
		OpenURL:   func(context.Context, string) error { return errors.New("no browser in the child") },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, gen := c.BearerToken(ctx)
	h := http.Header{}
	h.Set("WWW-Authenticate", os.Getenv("MCP_STDIO_AUTH_CHALLENGE"))
	fmt.Println("ready")
	retry, err := c.Unauthorized(ctx, gen, h)
	if err != nil || !retry {
		fmt.Fprintln(os.Stderr, "child: unauthorized:", retry, err)
		return 1
	}
	tok, _ := c.BearerToken(ctx)
	fmt.Println(tok)
	return 0
}
