package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenCommandArg names the test binary as a --bearer-token-command:
// "<binary> bearer-token-helper DIR" counts its runs in DIR/runs and
// prints DIR/token, as `gcloud auth print-access-token` prints the
// current token.
const tokenCommandArg = "bearer-token-helper"

func runTokenCommand(args []string) int {
	dir := args[0]
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	n, _ := strconv.Atoi(string(b))
	if err := os.WriteFile(filepath.Join(dir, "runs"), []byte(strconv.Itoa(n+1)), 0o600); err != nil {
		return 1
	}
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "no token: run the sign-in first")
		return 2
	}
	fmt.Printf("%s\n", tok)
	return 0
}

// A server whose tokens expire: it takes only the newest token. The relay
// gets its token from --bearer-token-command at start; when the token is
// rotated, the calls that meet the 401 (five at once) all wait for one
// run of the command and succeed with the new token. The token is never
// in the relay's log.
func TestRelayBearerTokenCommandRotates(t *testing.T) {
	is := is.New(t)
	newToken := func() string {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return "tok-" + hex.EncodeToString(b[:])
	}
	var current atomic.Value
	current.Store(newToken())
	var refused atomic.Int32
	h := streamableServer.handler(newFixture().server)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+current.Load().(string) {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "token expired", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	write := func(name, v string) {
		t.Helper()
		is.NoErr(os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600))
	}
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		n, _ := strconv.Atoi(string(b))
		return n
	}
	write("token", current.Load().(string))
	exe, err := os.Executable()
	is.NoErr(err)
	command := fmt.Sprintf("'%s' %s '%s'", exe, tokenCommandArg, dir)

	ctx := context.Background()
	rc := startRelay(t, ctx, srv.URL, "--transport", "streamable-http", "--bearer-token-command", command)
	res, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "one"}})
	is.NoErr(err)
	is.True(!res.IsError)
	is.Equal(runs(), 1) // at start only

	old := current.Load().(string)
	rotated := newToken()
	write("token", rotated)
	current.Store(rotated)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint(i)}})
			is.NoErr(err)
			is.True(!res.IsError)
		}()
	}
	wg.Wait()
	is.True(refused.Load() >= 1)
	is.Equal(runs(), 2) // the 401s on one token: one run

	rc.close(t)
	log := rc.stderr.String()
	is.True(!strings.Contains(log, old))
	is.True(!strings.Contains(log, rotated))
}

// A command that fails at start stops the relay in one line that names
// the flag and quotes what the command said.
func TestRelayBearerTokenCommandFailsAtStart(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir() // no token file: the command fails
	exe, err := os.Executable()
	is.NoErr(err)
	code, _, stderr, _ := runBinary(t, corpEnv(), "--bearer-token-command", fmt.Sprintf("'%s' %s '%s'", exe, tokenCommandArg, dir), "http://127.0.0.1:1/mcp")
	is.Equal(code, 1)
	is.Equal(strings.Count(strings.TrimSpace(stderr), "\n"), 0)
	is.True(strings.Contains(stderr, "--bearer-token-command failed (exit status 2)"))
	is.True(strings.Contains(stderr, "run the sign-in first"))
}
