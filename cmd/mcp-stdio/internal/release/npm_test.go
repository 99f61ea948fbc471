package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// npmTestVersion is the version the npm test builds and packs.
const npmTestVersion = "0.0.0-npm-test"

// The npm packages as a host's configuration uses them, npx -y mcp-stdio
// URL, on this machine: the binary is built as released, this platform's
// package and the main package are packed with npm pack, and npx runs
// mcp-stdio from the two tarballs, offline, with an empty npm cache of
// its own (the other five platform packages, optional dependencies that
// npm cannot fetch, are left out). Through npx the launcher answers
// --version with the version the build stamped in, and relays an MCP
// session over stdio to mcp-stdio serve (the built binary, publishing the
// bundled example server on loopback): initialize, initialized, two
// tools/call; stdout carries the JSON-RPC lines and nothing else; and
// when its stdin ends it exits 0.
func TestNPMPackageThroughNpx(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcp-stdio, packs its npm packages and runs them with npx")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not on PATH: this test packs the npm packages with npm and runs them with npx (Node.js ships both)")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not on PATH: this test runs the npm packages with npx (Node.js ships it with npm)")
	}
	is := is.New(t)
	h := hostTarget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()

	bin := filepath.Join(tmp, "build", h.executable())
	is.NoErr(os.MkdirAll(filepath.Dir(bin), 0o755))
	is.NoErr(goBuild(ctx, moduleRoot, h, npmTestVersion, bin))
	platform := filepath.Join(tmp, "npm", h.npmOS()+"-"+h.npmCPU())
	is.NoErr(writePlatformPackage(platform, moduleRoot, h, npmTestVersion, bin))
	main := filepath.Join(tmp, "npm", mainPackage)
	is.NoErr(writeMainPackage(main, moduleRoot, npmTestVersion, releaseTargets()))

	env := npmEnv(t, tmp)
	packs := filepath.Join(tmp, "packs")
	is.NoErr(os.MkdirAll(packs, 0o755))
	platformTgz := npmPack(t, ctx, npm, env, platform, packs)
	mainTgz := npmPack(t, ctx, npm, env, main, packs)
	work := filepath.Join(tmp, "work") // no package.json of its own: npx installs into its cache
	is.NoErr(os.MkdirAll(work, 0o755))
	npxArgs := []string{"--yes", "--offline", "--package=" + mainTgz, "--package=" + platformTgz, "mcp-stdio"}

	// --version, through npx, the launcher and the binary.
	cmd := exec.CommandContext(ctx, npx, append(npxArgs, "--version")...)
	cmd.Dir, cmd.Env = work, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npx mcp-stdio --version: %v\n%s", err, stderr.String())
	}
	is.Equal(string(out), "mcp-stdio "+npmTestVersion+"\n")

	// An MCP session relayed by npx mcp-stdio URL.
	url := startServe(t, bin)
	relay := exec.CommandContext(ctx, npx, append(npxArgs, url)...)
	relay.Dir, relay.Env = work, env
	stdin, err := relay.StdinPipe()
	is.NoErr(err)
	defer stdin.Close()
	stdout, err := relay.StdoutPipe()
	is.NoErr(err)
	var relayErr bytes.Buffer
	relay.Stderr = &relayErr
	is.NoErr(relay.Start())
	t.Cleanup(func() {
		if relay.ProcessState == nil {
			_ = relay.Process.Kill()
			_ = relay.Wait()
		}
		if t.Failed() {
			t.Logf("npx mcp-stdio stderr:\n%s", relayErr.String())
		}
	})
	lines := lines(stdout)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("write to the relay: %v", err)
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"npm-test","version":"1"}}}`)
	res := response(t, lines, "1")
	is.Equal(res.Get("result.protocolVersion").String(), "2025-11-25")
	is.True(res.Get("result.capabilities.tools").Exists()) // the example server's
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	res = response(t, lines, "2")
	is.True(!res.Get("result.isError").Bool())
	is.Equal(res.Get("result.structuredContent.sum").Float(), 5.0)

	send(`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo through npx"}}}`)
	res = response(t, lines, `"three"`)
	is.Equal(res.Get("result.content.0.text").String(), "héllo through npx")

	is.NoErr(stdin.Close())
	deadline := time.After(launcherWait)
	for open := true; open; {
		select {
		case line, ok := <-lines:
			open = ok
			is.True(!ok || gjson.Valid(line)) // nothing but JSON-RPC on stdout, to its end
		case <-deadline:
			t.Fatalf("the relay's stdout did not end within %v of its stdin", launcherWait)
		}
	}
	is.Equal(waitFor(t, relay).ExitCode(), 0)
}

// npmEnv returns the environment npm and npx run in: this process's, with
// npm's cache and user configuration in dir, so that nothing outside it
// is read or written, and offline.
func npmEnv(t *testing.T, dir string) []string {
	t.Helper()
	npmrc := filepath.Join(dir, "npmrc")
	if err := os.WriteFile(npmrc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(),
		"npm_config_cache="+filepath.Join(dir, "npm-cache"),
		"npm_config_userconfig="+npmrc,
		"npm_config_offline=true",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
		"npm_config_loglevel=error",
	)
}

// npmPack packs the package in dir into dest and returns the tarball's
// path.
func npmPack(t *testing.T, ctx context.Context, npm string, env []string, dir, dest string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, npm, "pack", "--json", "--pack-destination", dest)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack in %s: %v\n%s", dir, err, stderr.String())
	}
	name := gjson.GetBytes(out, "0.filename").String()
	if name == "" {
		t.Fatalf("npm pack in %s said no file name:\n%s", dir, out)
	}
	return filepath.Join(dest, name)
}

// servingLine is the line on serve's stderr that gives its URL.
var servingLine = regexp.MustCompile(`serving .* at (http://\S+)`)

// startServe runs bin serve on a free loopback port, publishing the
// bundled example server, and returns the URL it prints; at the end of the
// test it is stopped.
func startServe(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	logged := make(chan struct{})
	url := make(chan string, 1)
	go func() { // the log is read to its end, so serve never blocks on it
		defer close(logged)
		for line := range lines(stderr) {
			log.WriteString(line)
			if m := servingLine.FindStringSubmatch(line); m != nil {
				url <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			_ = cmd.Process.Kill() // no interrupt to send (Windows)
		}
		waitFor(t, cmd)
		<-logged
		if t.Failed() {
			t.Logf("mcp-stdio serve stderr:\n%s", log.String())
		}
	})
	select {
	case u := <-url:
		return u
	case <-logged:
		t.Fatal("mcp-stdio serve ended before it served")
	case <-time.After(launcherWait):
		t.Fatalf("mcp-stdio serve printed no URL within %v", launcherWait)
	}
	return ""
}

// response returns the response with the given id (a raw JSON token) from
// the relay's stdout lines, passing over what the server sends that is not
// a response.
func response(t *testing.T, lines <-chan string, id string) gjson.Result {
	t.Helper()
	for {
		line := nextLine(t, lines, "the response to "+id)
		if !gjson.Valid(line) {
			t.Fatalf("stdout line %q is not JSON", line)
		}
		m := gjson.Parse(line)
		if m.Get("method").Exists() || !m.Get("id").Exists() {
			continue // a request or notification of the server's
		}
		if m.Get("id").Raw != id {
			t.Fatalf("a response to %s, not %s: %s", m.Get("id").Raw, id, line)
		}
		if m.Get("error").Exists() {
			t.Fatalf("an error for %s: %s", id, line)
		}
		return m
	}
}
