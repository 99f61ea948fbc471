package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The suite and the Node.js runtime it needs.
const (
	// confSuiteVersion is the pinned suite, the one the Go and Python SDKs
	// pin in their CI; 0.2.0-alpha adds 2026-07-28 to the 2025 revisions.
	confSuiteVersion = "0.2.0-alpha.11"
	confSuitePackage = "@modelcontextprotocol/conformance@" + confSuiteVersion
	// confNodeMajor is the Node.js major installed for the suite: it needs
	// 22 or later (it calls fs.globSync; Node 20 crashes at load).
	confNodeMajor = "22"
	// confInstallTimeout bounds npm install.
	confInstallTimeout = 5 * time.Minute
	// confCompleteMarker is written into an install once it is complete,
	// before it is moved into place.
	confCompleteMarker = ".complete"
	// confSkipEnv set to 1 skips the conformance test explicitly.
	confSkipEnv = "MCP_STDIO_SKIP_CONFORMANCE"
)

// confSuite is an installed copy of the suite.
type confSuite struct {
	dir     string // the install directory
	node    string // the Node.js 22 binary
	nodeBin string // its directory, first on PATH for the suite
	script  string // the suite's dist/index.js
	install []string
}

// confNodePackage returns the npm package shipping a Node.js binary for
// this platform.
func confNodePackage() (string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	switch {
	case arch == "":
	case runtime.GOOS == "linux", runtime.GOOS == "darwin":
		return "node-" + runtime.GOOS + "-" + arch, nil
	}
	return "", fmt.Errorf("no Node.js package for %s/%s", runtime.GOOS, runtime.GOARCH)
}

// paths returns the suite's files inside an install directory.
func (s *confSuite) paths(dir, nodePkg string) {
	s.dir = dir
	s.nodeBin = filepath.Join(dir, "node_modules", nodePkg, "bin")
	s.node = filepath.Join(s.nodeBin, "node")
	s.script = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
}

// env returns the environment the suite runs in: Node.js 22 first on PATH.
func (s *confSuite) env(extra ...string) []string {
	env := make([]string, 0, len(os.Environ())+1+len(extra))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+s.nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return append(env, extra...)
}

// confInstall returns the suite, installing it with the machine's npm into
// the user cache directory when no complete install is there yet. An
// install goes into a temporary directory beside its final place and is
// renamed into place once complete, so an interrupted install is never
// taken for a complete one, and two test processes installing at once do
// not collide.
func confInstall(t *testing.T) *confSuite {
	t.Helper()
	nodePkg, err := confNodePackage()
	if err != nil {
		t.Skipf("the conformance suite cannot run here: %v", err)
	}
	var rel confSuite
	rel.paths("", nodePkg)
	s := &confSuite{install: []string{
		fmt.Sprintf("npm install %s@%s %s", nodePkg, confNodeMajor, confSuitePackage),
	}}
	s.paths(npmInstall{
		what:     "the conformance suite",
		dir:      "conformance-" + confSuiteVersion,
		packages: []string{nodePkg + "@" + confNodeMajor, confSuitePackage},
		files:    []string{rel.node, rel.script},
		skipEnv:  confSkipEnv,
	}.ensure(t), nodePkg)
	return s
}

// nodeVersion returns what the suite's Node.js reports as its version.
func (s *confSuite) nodeVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, s.node, "--version").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("node --version: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// run runs the suite with args, with output going to out, and returns its
// exit code (-1 when it did not run to an exit).
func (s *confSuite) run(ctx context.Context, out *confLog, args ...string) (int, error) {
	cmd := exec.CommandContext(ctx, s.node, append([]string{s.script}, args...)...)
	cmd.Env = s.env()
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}
