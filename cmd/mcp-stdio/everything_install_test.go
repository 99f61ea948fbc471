package main_test

import (
	"path/filepath"
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
	node := filepath.Join("node_modules", nodePkg, "bin", "node")
	script := filepath.Join("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	dir := npmInstall{
		what:     "server-everything",
		dir:      "server-everything-" + everythingVersion + "-node" + confNodeMajor,
		packages: []string{nodePkg + "@" + confNodeMajor, everythingPackage},
		files:    []string{node, script},
	}.ensure(t)
	return everything{node: filepath.Join(dir, node), script: filepath.Join(dir, script)}
}
