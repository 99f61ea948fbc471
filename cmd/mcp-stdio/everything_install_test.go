package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The reference server the serve tests of issue 24 run behind serve:
// @modelcontextprotocol/server-everything from npm, pinned, installed with
// Node.js 22 as the conformance suite is, into the user cache directory,
// once. It is run in its stdio mode (`node dist/index.js stdio`), which
// opens no port: it speaks on its stdin and stdout only. It speaks the
// session era only, asks its client for roots 350 ms after
// notifications/initialized (and keeps them), and its get-roots-list tool
// shows the roots it holds.
const (
	everythingVersion = "2026.8.31"
	everythingPackage = "@modelcontextprotocol/server-everything@" + everythingVersion
)

// everything is an installed server-everything.
type everything struct {
	node   string // Node.js 22
	script string // dist/index.js
}

// command returns the command that runs it on stdio.
func (e everything) command() []string { return []string{e.node, e.script, "stdio"} }

// everythingInstall returns server-everything, installing it with npm into
// the user cache directory when no complete install is there yet (in a
// temporary directory renamed into place once complete, as confInstall
// does). Without npm the test is skipped, saying what it needs.
func everythingInstall(t *testing.T) everything {
	t.Helper()
	nodePkg, err := confNodePackage()
	if err != nil {
		t.Skipf("server-everything cannot run here: %v", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	parent := filepath.Join(cache, "mcp-stdio")
	dir := filepath.Join(parent, "server-everything-"+everythingVersion+"-node"+confNodeMajor)
	paths := func(d string) everything {
		return everything{
			node:   filepath.Join(d, "node_modules", nodePkg, "bin", "node"),
			script: filepath.Join(d, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		}
	}
	complete := func(d string) bool {
		e := paths(d)
		for _, f := range []string{filepath.Join(d, confCompleteMarker), e.node, e.script} {
			if _, err := os.Stat(f); err != nil {
				return false
			}
		}
		return true
	}
	if complete(dir) {
		return paths(dir)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("npm is not on PATH: this test installs %s and Node.js %s with npm", everythingPackage, confNodeMajor)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(parent, ".server-everything-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), confInstallTimeout)
	defer cancel()
	install := []string{"install", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error", nodePkg + "@" + confNodeMajor, everythingPackage}
	cmd := exec.CommandContext(ctx, npm, install...)
	cmd.Dir = tmp
	t.Logf("installing server-everything: npm %s (in %s)", strings.Join(install, " "), tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, confCompleteMarker), []byte("npm "+strings.Join(install, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !complete(tmp) {
		t.Fatalf("npm install left no %s or no %s", everythingPackage, nodePkg)
	}
	if err := os.Rename(tmp, dir); err != nil && !complete(dir) {
		t.Fatalf("moving the install into place: %v", err)
	}
	return paths(dir)
}
