package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// TestMain removes the binary the tests build.
func TestMain(m *testing.M) {
	code := m.Run()
	_ = os.RemoveAll(binaryDir())
	os.Exit(code)
}

// binaryDir is where this test process builds mcp-stdio.
func binaryDir() string {
	return filepath.Join(os.TempDir(), "mcp-stdio-deploy-"+strconv.Itoa(os.Getpid()))
}

// buildBinary builds mcp-stdio once per test process as the Containerfile
// does: CGO_ENABLED=0, -trimpath, stripped.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir := binaryDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcp-stdio")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=0.0.0-deploy-test", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// binary returns the built mcp-stdio, skipping the test under -short.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the mcp-stdio binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// serveHelp is what `mcp-stdio serve --help` prints.
func serveHelp(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(binary(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("mcp-stdio serve --help: %v\n%s", err, out)
	}
	return string(out)
}
