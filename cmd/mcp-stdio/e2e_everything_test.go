//go:build linux

package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// serve in the field (issue 24): @modelcontextprotocol/server-everything
// from npm (see everything_install_test.go) behind the built binary.

// modernCall sends a 2026-07-28 tools/call of tool with args (a JSON
// object), id and the client capabilities caps, plus more params (",…"
// after _meta), and returns the HTTP status and the response to the call
// (the last message of an event stream, or the JSON body).
func (g *servedGateway) modernCall(t *testing.T, id int, tool, args, caps, more string) (int, frame.Message) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s,"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s,`+
		`"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"}}}}`, id, tool, args, more, caps)
	req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	defer resp.Body.Close()
	var last frame.Message
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r := frame.NewSSEReader(resp.Body, 0)
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if m, err := frame.Parse(ev.Data); err == nil && m.Kind().IsResponse() {
				last = m
			}
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if last, err = frame.Parse(b); err != nil {
			t.Fatalf("tools/call %s: %d %q", tool, resp.StatusCode, b)
		}
	}
	if last.Len() == 0 {
		t.Fatalf("tools/call %s: no response (HTTP %d)", tool, resp.StatusCode)
	}
	return resp.StatusCode, last
}

// toolText returns the text of a tool result's first content.
func toolText(m frame.Message) string { return m.Get("result.content.0.text").String() }

// A 2026-07-28 client's first call on a fresh serve is answered
// `complete`, 20 runs of 20 — though server-everything asks roots/list
// 350 ms after its handshake, during a call that lasts a second (even runs)
// or from the call itself (odd runs: get-roots-list) —, and the roots the
// client declares never reach another client: the child's roots are the
// connection's, those of --root. A client that got input_required for
// roots anyway would answer it with its own roots, which the next client
// would then see.
func TestEverythingFirstCallCompletes(t *testing.T) {
	e := everythingInstall(t)
	const runs = 20
	root := t.TempDir()
	rootURI := "file://" + filepath.ToSlash(root)
	complete := 0
	for run := range runs {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			is := is.New(t)
			g := startServe(t, append([]string{"--root", root, "--"}, e.command()...)...)
			tool, args := "trigger-long-running-operation", `{"duration":1,"steps":1}`
			if run%2 == 1 {
				tool, args = "get-roots-list", `{}`
			}
			mine := `{"roots":{}}`
			status, m := g.modernCall(t, 1, tool, args, mine, "")
			is.Equal(status, http.StatusOK)
			for round := 2; m.Get("result.resultType").String() == "input_required" && round < 10; round++ {
				// What a client does: it answers, here with roots that are its own.
				t.Errorf("run %d: the first call was answered input_required: %s", run, m)
				responses := map[string]any{}
				for key := range m.Get("result.inputRequests").Map() {
					responses[key] = map[string]any{"roots": []map[string]string{{"uri": "file:///secret-of-the-first-client"}}}
				}
				b, _ := json.Marshal(responses)
				state, _ := json.Marshal(m.Get("result.requestState").String())
				_, m = g.modernCall(t, round, tool, args, mine, `,"inputResponses":`+string(b)+`,"requestState":`+string(state))
			}
			if m.Get("result.resultType").String() == "complete" && !m.Get("result.isError").Bool() {
				complete++
			}
			is.Equal(m.Get("result.resultType").String(), "complete")
			is.True(!m.Get("result.isError").Bool())

			// Another client asks the child for the roots it holds.
			_, other := g.modernCall(t, 1, "get-roots-list", `{}`, `{"roots":{}}`, "")
			is.Equal(other.Get("result.resultType").String(), "complete")
			is.True(strings.Contains(toolText(other), rootURI))                                  // the connection's roots
			is.True(!strings.Contains(toolText(other), "secret-of-the-first-client"))            // never the first client's
			is.True(strings.Contains(g.stderr.String(), "the server's roots/list was answered")) // said once
		})
	}
	if complete != runs {
		t.Fatalf("the first call was answered complete in %d runs of %d", complete, runs)
	}
}

// A server that cannot start (Node.js on a script that does not exist)
// is reported to the client with its cause — Node's "Cannot find module"
// and what to do — not just "the server process exited", in either era.
func TestEverythingFailedStartSaysWhy(t *testing.T) {
	e := everythingInstall(t)
	missing := filepath.Join(t.TempDir(), "missing.js")
	g := startServe(t, "--", e.node, missing)
	cause := "Error: Cannot find module '" + missing + "'"
	advice := "Likely cause: a module or script the server loads is missing"

	t.Run("2026-07-28", func(t *testing.T) {
		is := is.New(t)
		status, m := g.modernCall(t, 1, "echo", `{"message":"hi"}`, `{}`, "")
		is.Equal(status, http.StatusBadGateway)
		msg := m.Get("error.message").String()
		is.True(strings.HasPrefix(msg, "the server could not start: the server process exited during its handshake (exit status 1). Its stderr:\n"))
		is.True(strings.Contains(msg, cause))
		is.True(strings.Contains(msg, advice))
	})
	t.Run("session era", func(t *testing.T) {
		is := is.New(t)
		_, answer, _ := g.post(t, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
		m := frame.MustParse(answer)
		msg := m.Get("error.message").String()
		is.True(strings.Contains(msg, cause))
		is.True(strings.Contains(msg, advice))
	})
	is := is.New(t)
	is.True(strings.Contains(g.stderr.String(), `msg="server process exited with an error"`))
	is.True(strings.Contains(g.stderr.String(), cause))
}

// Five session-era clients that never send DELETE, under --max-sessions 3:
// all five are served, and never more than three server processes run —
// the idle sessions give way, the longest idle first; a client whose
// session gave way gets 404 on its next request.
func TestEverythingIdleSessionsGiveWay(t *testing.T) {
	e := everythingInstall(t)
	is := is.New(t)
	g := startServe(t, append([]string{"--max-sessions", "3", "--"}, e.command()...)...)
	started := g.stderr.Watch(serverLine)
	var servers []int
	alive := func() int {
		n := 0
		for _, pid := range servers {
			if !transporttest.ProcessGone(t, pid, 0) {
				n++
			}
		}
		return n
	}
	var sids []string
	for client := range 5 {
		sid := g.initialize(t)
		servers = append(servers, serverProcs(t, started)["server"])
		status, _, _ := g.post(t, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		is.Equal(status, http.StatusAccepted)
		status, answer, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"client `+strconv.Itoa(client)+`"}}}`)
		is.Equal(status, http.StatusOK)
		is.Equal(frame.MustParse(answer).Get("result.content.0.text").String(), "Echo: client "+strconv.Itoa(client)) // served
		is.True(alive() <= 3)                                                                                         // never more than three
		sids = append(sids, sid)
	}
	is.Equal(alive(), 3)
	for i, sid := range sids {
		status, _, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		want := http.StatusOK
		if i < 2 {
			want = http.StatusNotFound // gave way: its client initializes again
		}
		is.Equal(status, want) // client i
	}
	is.Equal(strings.Count(g.stderr.String(), `msg="session evicted`), 2)
}

// launcherLayout lays out what npm installs for `npx mcp-stdio`: the main
// package with its launcher, and this platform's package holding the
// built binary. It returns the launcher's path.
func launcherLayout(t *testing.T) string {
	t.Helper()
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		t.Skipf("no npm package for %s", runtime.GOARCH)
	}
	modules := filepath.Join(t.TempDir(), "node_modules")
	main := filepath.Join(modules, "mcp-stdio")
	platform := filepath.Join(modules, "@mcp-stdio", "linux-"+arch, "bin")
	for _, d := range []string{filepath.Join(main, "bin"), platform} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile(filepath.Join("..", "..", ".release", "npm", "mcp-stdio", "bin", "mcp-stdio.js"))
	if err != nil {
		t.Fatal(err)
	}
	launcher := filepath.Join(main, "bin", "mcp-stdio.js")
	if err := os.WriteFile(launcher, src, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"name":"mcp-stdio","version":"0.0.0","optionalDependencies":{"@mcp-stdio/linux-` + arch + `":"0.0.0"}}`
	if err := os.WriteFile(filepath.Join(main, "package.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(relayBinary(t), filepath.Join(platform, "mcp-stdio")); err != nil {
		t.Fatal(err)
	}
	return launcher
}

// The npm launcher and serve end together, with the server processes,
// however the launcher's end comes: its parent sends it SIGTERM (passed
// on to serve, which drains and exits), it is killed (serve gets its
// parent-death signal), or its own parent dies without a word, as npm's
// exec does (the launcher sees it and ends serve as a SIGTERM would).
func TestServeEndsWithItsLauncher(t *testing.T) {
	e := everythingInstall(t)
	launcher := launcherLayout(t)
	serveArgs := append([]string{launcher, "serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--"}, e.command()...)
	for _, how := range []string{"SIGTERM to the launcher", "SIGKILL to the launcher", "SIGKILL to the launcher's parent"} {
		t.Run(how, func(t *testing.T) {
			is := is.New(t)
			var cmd *exec.Cmd
			viaShell := how == "SIGKILL to the launcher's parent"
			if viaShell {
				// A parent that runs the launcher in the foreground, and
				// passes nothing on when it dies.
				cmd = exec.Command("/bin/sh", append([]string{"-c", `"$0" "$@"; echo "the shell lived on" >&2`, e.node}, serveArgs...)...)
			} else {
				cmd = exec.Command(e.node, serveArgs...)
			}
			cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
			stderrPipe, err := cmd.StderrPipe()
			is.NoErr(err)
			is.NoErr(cmd.Start())
			stderr := &transporttest.SyncBuffer{}
			copied := make(chan struct{})
			go func() {
				// Ends when every process holding the pipe is gone: the
				// shell, the launcher and serve (its servers have pipes of
				// their own).
				io.Copy(stderr, bufio.NewReader(stderrPipe))
				stderr.Close()
				close(copied)
			}()
			var procs map[string]int
			t.Cleanup(func() {
				cmd.Process.Kill()
				if pid := procs["serve"]; pid > 0 && !transporttest.ProcessGone(t, pid, 0) {
					syscall.Kill(pid, syscall.SIGKILL) // a failed test leaves nothing behind
				}
				<-copied
				cmd.Wait()
				if t.Failed() {
					t.Logf("stderr:\n%s", stderr)
				}
			})
			started := stderr.Watch(serverLine)
			g := &servedGateway{stderr: stderr, client: &http.Client{Transport: &http.Transport{}, Timeout: serveProcWait}}
			defer g.client.CloseIdleConnections()
			g.url = stderr.Watch(serveURLLine).Next(t, serveProcWait)[1]
			g.initialize(t) // a session, and its server process
			procs = serverProcs(t, started)

			launcherPID := cmd.Process.Pid
			if viaShell {
				kids := procfs.Children(cmd.Process.Pid)
				is.Equal(len(kids), 1)
				launcherPID = kids[0]
			}
			kids := procfs.Children(launcherPID)
			is.Equal(len(kids), 1)
			procs["serve"] = kids[0]
			procs["launcher"] = launcherPID
			checkRunning(t, procs)

			switch how {
			case "SIGTERM to the launcher":
				is.NoErr(syscall.Kill(launcherPID, syscall.SIGTERM))
			default:
				is.NoErr(cmd.Process.Kill()) // the launcher, or its parent
			}
			checkGone(t, procs, "after "+how)
			select {
			case <-copied: // nothing holds serve's stderr any more
			case <-time.After(serveProcWait):
				t.Fatalf("serve's stderr still open %v after %s", serveProcWait, how)
			}
			is.True(strings.Contains(stderr.String(), `msg="drain started`)) // serve drained: it ended as on SIGTERM
			if viaShell {
				is.True(!strings.Contains(stderr.String(), "the shell lived on"))
			}
		})
	}
}
