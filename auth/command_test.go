package auth

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// tokenCommand is the token command of these tests, run as "<test binary>
// token-command DIR": it counts its runs in DIR/runs, and prints DIR/token
// (with a trailing newline, as gcloud does). With DIR/fail present it
// prints that on stderr and exits 3; with DIR/hang it never ends; it
// prints its environment's MCP_BEARER_TOKEN and its arguments to DIR/seen.
func tokenCommand(args []string) int {
	dir := args[0]
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(runs)))
	_ = os.WriteFile(filepath.Join(dir, "runs"), []byte(strconv.Itoa(n+1)), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "seen"), []byte(os.Getenv("MCP_BEARER_TOKEN")+"|"+strings.Join(os.Args, " ")), 0o600)
	if msg, err := os.ReadFile(filepath.Join(dir, "fail")); err == nil {
		os.Stderr.Write(msg)
		return 3
	}
	if _, err := os.Stat(filepath.Join(dir, "hang")); err == nil {
		time.Sleep(time.Hour) // killed at the source's timeout
	}
	tok, _ := os.ReadFile(filepath.Join(dir, "token"))
	fmt.Printf("%s\n", tok)
	return 0
}

// commandDir is a token command's directory, with helpers.
type commandDir string

func (d commandDir) set(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(string(d), name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (d commandDir) runs(t *testing.T) int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(string(d), "runs"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// newCommandSource returns a source running the token command in a fresh
// directory.
func newCommandSource(t *testing.T, timeout time.Duration) (*CommandSource, commandDir) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := commandDir(t.TempDir())
	s, err := NewCommandSource(CommandOptions{Argv: []string{exe, "token-command", string(dir)}, Name: "--bearer-token-command", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// The command runs at Fetch and once per 401 on the current token, for
// all the requests that met it at once; a 401 on an older token is just
// sent again; the same token printed again is an error, not a retry.
func TestCommandSourceRotatesOncePer401(t *testing.T) {
	is := is.New(t)
	s, dir := newCommandSource(t, 0)
	dir.set(t, "token", "tok-1")
	is.NoErr(s.Fetch(context.Background()))
	tok, gen := s.BearerToken(context.Background())
	is.Equal(tok, "tok-1") // trimmed
	is.Equal(dir.runs(t), 1)

	dir.set(t, "token", "tok-2")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			retry, err := s.Unauthorized(context.Background(), gen, http.Header{})
			is.NoErr(err)
			is.True(retry)
		}()
	}
	wg.Wait()
	is.Equal(dir.runs(t), 2) // eight 401s on one token: one run
	tok, gen2 := s.BearerToken(context.Background())
	is.Equal(tok, "tok-2")
	is.True(gen2 != gen)

	retry, err := s.Unauthorized(context.Background(), gen, http.Header{}) // a late 401 on tok-1
	is.NoErr(err)
	is.True(retry)
	is.Equal(dir.runs(t), 2)

	// The generation the Transport stamped on the 401 wins.
	retry, err = s.Unauthorized(context.Background(), gen2, http.Header{GenerationHeader: {strconv.FormatUint(gen, 10)}})
	is.NoErr(err)
	is.True(retry)
	is.Equal(dir.runs(t), 2)

	retry, err = s.Unauthorized(context.Background(), gen2, http.Header{}) // tok-2 refused, the command still prints it
	is.True(!retry)
	is.True(err != nil && strings.Contains(err.Error(), "printed the token the server just refused"))
	is.Equal(dir.runs(t), 3)

	retry, err = s.Forbidden(context.Background(), gen2, http.Header{})
	is.True(!retry && err == nil) // a 403 stands
}

// A failing command, one that prints nothing, and one that hangs: each is
// an error in one line that names the flag and says what to do, quoting
// the command's stderr; the token and the command's output never appear.
func TestCommandSourceFailures(t *testing.T) {
	is := is.New(t)
	s, dir := newCommandSource(t, 0)
	dir.set(t, "fail", "ERROR: (gcloud.auth.print-access-token) Reauthentication required.\nPlease run:\n\n  $ gcloud auth login\n")
	err := s.Fetch(context.Background())
	is.True(err != nil)
	msg := err.Error()
	is.True(strings.HasPrefix(msg, "--bearer-token-command failed (exit status 3)"))
	is.True(strings.Contains(msg, "Reauthentication required. Please run: $ gcloud auth login"))
	is.True(strings.Contains(msg, "run it yourself"))
	is.True(!strings.Contains(msg, "\n"))

	s, dir = newCommandSource(t, 0)
	dir.set(t, "token", "  \n")
	err = s.Fetch(context.Background())
	is.True(err != nil && strings.Contains(err.Error(), "printed nothing on stdout"))

	s, dir = newCommandSource(t, 0)
	dir.set(t, "token", "two\nlines")
	err = s.Fetch(context.Background())
	is.True(err != nil && strings.Contains(err.Error(), "more than one line"))

	s, dir = newCommandSource(t, 300*time.Millisecond)
	dir.set(t, "hang", "")
	err = s.Fetch(context.Background())
	is.True(err != nil && strings.Contains(err.Error(), "did not finish within 300ms"))

	_, err = NewCommandSource(CommandOptions{})
	is.True(err != nil)
	s, err = NewCommandSource(CommandOptions{Argv: []string{"mcp-stdio-no-such-command-xyz"}, Name: "--bearer-token-command"})
	is.NoErr(err)
	err = s.Fetch(context.Background())
	is.True(err != nil && strings.Contains(err.Error(), "mcp-stdio-no-such-command-xyz is not found"))
}

// The command's environment lacks MCP_BEARER_TOKEN, and its arguments
// are its own: the token goes to no child.
func TestCommandSourceEnvironment(t *testing.T) {
	is := is.New(t)
	t.Setenv("MCP_BEARER_TOKEN", "from-env")
	s, dir := newCommandSource(t, 0)
	dir.set(t, "token", "tok-1")
	is.NoErr(s.Fetch(context.Background()))
	dir.set(t, "token", "tok-2")
	_, err := s.Unauthorized(context.Background(), s.Generation(), http.Header{})
	is.NoErr(err)
	seen, err := os.ReadFile(filepath.Join(string(dir), "seen"))
	is.NoErr(err)
	is.True(strings.HasPrefix(string(seen), "|"))     // no MCP_BEARER_TOKEN
	is.True(!strings.Contains(string(seen), "tok-1")) // the previous token is not passed on
}
