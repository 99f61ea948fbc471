package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// npmInstall is a set of npm packages the tests install, pinned, into the
// user cache directory, once: the conformance suite, the OpenID provider,
// server-everything, the peers of the era tests.
type npmInstall struct {
	what     string   // what it is, for the log and the messages
	dir      string   // the install's directory name under <user cache>/mcp-stdio
	packages []string // what npm installs (Node.js's package first)
	// files are paths, relative to the install's directory, that a
	// complete install has (besides the marker written last).
	files []string
	// skipEnv, when set, makes a missing npm fail the test, naming the
	// variable that skips it explicitly; else the test is skipped.
	skipEnv string
}

// cacheParent returns <user cache>/mcp-stdio, else one under the temporary
// directory.
func cacheParent() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "mcp-stdio")
}

// complete reports whether d holds a finished install: the marker and
// every file.
func (n npmInstall) complete(d string) bool {
	for _, f := range append([]string{confCompleteMarker}, n.files...) {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			return false
		}
	}
	return true
}

// ensure returns the install's directory, installing it with npm when no
// complete install is there yet: in a temporary directory beside it,
// renamed into place once complete (another test process that finished
// first wins, its install as good).
func (n npmInstall) ensure(t *testing.T) string {
	t.Helper()
	parent := cacheParent()
	dir := filepath.Join(parent, n.dir)
	if n.complete(dir) {
		return dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		if n.skipEnv != "" {
			t.Fatalf("npm is not on PATH: this test installs %s with npm (install Node.js with npm, or set %s=1 to skip it explicitly)",
				strings.Join(n.packages, " "), n.skipEnv)
		}
		t.Skipf("npm is not on PATH: this test installs %s with npm (install Node.js with npm to run it)", strings.Join(n.packages, " "))
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(parent, "."+n.dir+"-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // nothing left after the rename
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), confInstallTimeout)
	defer cancel()
	install := append([]string{"install", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"}, n.packages...)
	cmd := exec.CommandContext(ctx, npm, install...)
	cmd.Dir = tmp
	t.Logf("installing %s: npm %s (in %s)", n.what, strings.Join(install, " "), tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	for _, f := range n.files {
		if _, err := os.Stat(filepath.Join(tmp, f)); err != nil {
			t.Fatalf("npm install left no %s: %v", f, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, confCompleteMarker), []byte("npm "+strings.Join(install, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil && !n.complete(dir) {
		t.Fatalf("moving the install into place: %v", err)
	}
	return dir
}
