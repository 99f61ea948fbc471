package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/mw"
)

// configFor parses args and env as serve does and returns its config.
func configFor(t *testing.T, args []string, env map[string]string) (replicaID string, stateKey []byte, err error) {
	t.Helper()
	var f serveFlags
	fs, _ := newServeFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return env[k] }
	if !flagSet(fs, "state-key") && !flagSet(fs, "state-key-file") {
		f.stateKey = getenv("MCP_STDIO_STATE_KEY")
	}
	if !flagSet(fs, "replica-id") {
		f.replicaID = defaultReplicaID(getenv)
	}
	f.maxBuffered = f.maxBody
	cfg, _, err := f.config([]string{"true"}, io.Discard, slog.New(slog.DiscardHandler))
	return cfg.ReplicaID, cfg.StateKey, err
}

// --replica-id defaults to $POD_NAME, then $HOSTNAME up to its first
// '.', else none; a bad one is refused in one line.
func TestServeReplicaIDFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
		err  bool
	}{
		{"none", nil, nil, "", false},
		{"flag", []string{"--replica-id", "pod-7"}, map[string]string{"POD_NAME": "p", "HOSTNAME": "h"}, "pod-7", false},
		{"pod name", nil, map[string]string{"POD_NAME": "mcp-0", "HOSTNAME": "h"}, "mcp-0", false},
		{"hostname", nil, map[string]string{"HOSTNAME": "box"}, "box", false},
		{"fqdn hostname", nil, map[string]string{"HOSTNAME": "box.example.com"}, "box", false},
		{"flag with a dot", []string{"--replica-id", "a.b"}, nil, "", true},
		{"pod name with a space", nil, map[string]string{"POD_NAME": "a b"}, "", true},
		{"too long", []string{"--replica-id", strings.Repeat("x", mw.MaxReplicaIDLen+1)}, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			id, _, err := configFor(t, tc.args, tc.env)
			if tc.err {
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), "--replica-id"))
				is.True(!strings.Contains(err.Error(), "\n"))
				return
			}
			is.NoErr(err)
			is.Equal(id, tc.want)
		})
	}
}

const testKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// --state-key-file reads the key once, in hex or base64, from a file only
// its owner can read.
func TestServeStateKeyFile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		is.NoErr(os.WriteFile(p, []byte(content), mode))
		is.NoErr(os.Chmod(p, mode))
		return p
	}
	want, _ := mw.ParseStateKey(testKeyHex)

	for _, p := range []string{
		write("hex", testKeyHex+"\n", 0o600),
		write("b64", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", 0o400),
		write("fsgroup", testKeyHex, 0o440), // a Kubernetes Secret with fsGroup
	} {
		_, k, err := configFor(t, []string{"--state-key-file", p}, map[string]string{"MCP_STDIO_STATE_KEY": strings.Repeat("ff", 32)})
		is.NoErr(err)
		is.Equal(k, want) // the file wins over the env var
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--state-key-file", write("open", testKeyHex, 0o644)}, "chmod 600"},
		{[]string{"--state-key-file", write("group", testKeyHex, 0o660)}, "chmod 600"},
		{[]string{"--state-key-file", write("others", testKeyHex, 0o604)}, "chmod 600"},
		{[]string{"--state-key-file", write("short", "abcd", 0o600)}, "32 bytes"},
		{[]string{"--state-key-file", write("big", strings.Repeat("a", 4096), 0o600)}, "larger than a key"},
		{[]string{"--state-key-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"--state-key-file", write("both", testKeyHex, 0o600), "--state-key", testKeyHex}, "exclusive"},
	} {
		_, _, err := configFor(t, tc.args, nil)
		is.True(err != nil)                                      // tc.msg
		is.True(strings.Contains(err.Error(), tc.msg))           // tc.msg
		is.True(strings.Contains(err.Error(), "--state-key"))    // names the flag
		is.True(!strings.Contains(err.Error(), "\n"))            // one line
		is.True(!strings.Contains(err.Error(), testKeyHex[:16])) // never the key
	}
}

var servingOn = regexp.MustCompile(`^mcp-stdio: serving .* on (\S+) `)

// startServe runs Serve with args and env until the test ends and returns
// the address it is bound to.
func startServe(t *testing.T, args []string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, pw, Options{})
		pw.Close()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
		close(addr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	a, ok := <-addr
	if !ok {
		t.Fatal("serve ended before it listened")
	}
	return a
}

// A serve listening on a loopback address other than 127.0.0.1 answers
// requests addressed to that address (listen and bound port alike), and
// still refuses any other Host.
func TestServeOwnLoopbackHost(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	ln.Close()
	addr := startServe(t, []string{"--listen", "127.0.0.2:0", "--no-sse", "--", "true"}, nil)
	_, port, err := net.SplitHostPort(addr)
	is.NoErr(err)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	status := func(host string) int {
		req, err := http.NewRequest(http.MethodDelete, "http://"+addr+"/mcp", nil)
		is.NoErr(err)
		req.Host = host
		resp, err := client.Do(req)
		is.NoErr(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	is.Equal(status("127.0.0.2:"+port), http.StatusBadRequest) // past the Host check: no session named
	is.Equal(status("127.0.0.2"), http.StatusBadRequest)
	is.Equal(status("localhost:"+port), http.StatusBadRequest)
	is.Equal(status("127.0.0.3:"+port), http.StatusForbidden) // not this server's address
	is.Equal(status("evil.example:"+port), http.StatusForbidden)
}
