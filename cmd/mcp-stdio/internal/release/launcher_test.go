package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// fakeEnv, when set, makes this test binary act as the binary of a
// platform package (it is copied into one), as fake describes.
const fakeEnv = "MCP_STDIO_RELEASE_FAKE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fake(mode))
	}
	os.Exit(m.Run())
}

// fake is this test binary run by the launcher, in one of these modes:
//
//   - echo:N writes its arguments as a JSON array and a newline, then
//     copies stdin to stdout, and exits with status N;
//   - die:SIG sends itself SIGTERM, SIGINT or SIGKILL (and never exits
//     otherwise: it reads stdin until it ends);
//   - wait writes "ready", then waits for SIGINT, SIGTERM or SIGHUP,
//     writes "got " and the signal's name, and exits with status 42; it
//     exits with status 4 when its stdin ends first (so that a failed test,
//     whose pipes close, leaves no process behind);
//   - parent writes MCP_STDIO_PARENT_PID and its parent's process id, and
//     exits.
func fake(mode string) int {
	kind, arg, _ := strings.Cut(mode, ":")
	switch kind {
	case "parent":
		fmt.Printf("%s %d\n", os.Getenv("MCP_STDIO_PARENT_PID"), os.Getppid())
		return 0
	case "echo":
		b, _ := json.Marshal(os.Args[1:])
		fmt.Printf("%s\n", b)
		_, _ = io.Copy(os.Stdout, os.Stdin)
		n, _ := strconv.Atoi(arg)
		return n
	case "die":
		sig := map[string]os.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL}[arg]
		p, _ := os.FindProcess(os.Getpid())
		if err := p.Signal(sig); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 3
	case "wait":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		stdinEnded := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(stdinEnded)
		}()
		fmt.Println("ready")
		select {
		case s := <-sigs:
			fmt.Printf("got %v\n", s)
			return 42
		case <-stdinEnded:
			return 4
		}
	}
	fmt.Fprintf(os.Stderr, "%s=%q: no such mode\n", fakeEnv, mode)
	return 3
}

// launcherWait bounds each wait for the launcher.
const launcherWait = 30 * time.Second

// hostTarget returns this machine's target, skipping the test when there
// is no release for it.
func hostTarget(t *testing.T) target {
	t.Helper()
	h := target{runtime.GOOS, runtime.GOARCH}
	if !slices.Contains(releaseTargets(), h) {
		t.Skipf("no release is built for %v", h)
	}
	return h
}

// nodeBinary returns Node.js, skipping the test without it.
func nodeBinary(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the launcher tests run the npm package's launcher with Node.js")
	}
	return node
}

// installFake lays out what npm installs, without npm: node_modules holds
// the main package, whose optional dependencies are the given targets,
// and, unless withPlatform is false, this machine's platform package with
// this test binary as its binary. It returns the launcher's path.
func installFake(t *testing.T, targets []target, withPlatform bool) string {
	t.Helper()
	modules := filepath.Join(t.TempDir(), "node_modules")
	if err := writeMainPackage(filepath.Join(modules, mainPackage), moduleRoot, "1.2.3", targets); err != nil {
		t.Fatal(err)
	}
	if withPlatform {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		h := hostTarget(t)
		if err := writePlatformPackage(filepath.Join(modules, filepath.FromSlash(h.npmPackage())), moduleRoot, h, "1.2.3", self); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(modules, mainPackage, "bin", "mcp-stdio.js")
}

// launcherCommand returns the launcher run by Node.js with args, its
// binary in the given fake mode. Should the test end with it running, it
// is killed.
func launcherCommand(t *testing.T, launcher, mode string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(nodeBinary(t), append([]string{launcher}, args...)...)
	cmd.Env = append(os.Environ(), fakeEnv+"="+mode)
	t.Cleanup(func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	return cmd
}

// lines returns a channel of the lines r yields, closed at its end.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				ch <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// nextLine returns the next line from ch, failing the test when none comes
// within launcherWait.
func nextLine(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case line, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return line
	case <-time.After(launcherWait):
		t.Fatalf("%s: nothing within %v", what, launcherWait)
	}
	return ""
}

// waitFor waits for cmd to exit, for at most launcherWait.
func waitFor(t *testing.T, cmd *exec.Cmd) *os.ProcessState {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(launcherWait):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not exit within %v", cmd.Args, launcherWait)
	}
	return cmd.ProcessState
}

// The launcher runs the platform package's binary with its arguments as
// given and its own stdin and stdout, and exits with the binary's status.
func TestLauncherRunsTheBinary(t *testing.T) {
	is := is.New(t)
	launcher := installFake(t, releaseTargets(), true)
	args := []string{"--flag", "two words", "ü", "", "https://example.com/mcp?a=1&b=2"}
	cmd := launcherCommand(t, launcher, "echo:7", args...)
	cmd.Stdin = strings.NewReader("line one\nline two\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	is.True(errors.As(err, &ee)) // a non-zero exit
	is.Equal(cmd.ProcessState.ExitCode(), 7)
	want, _ := json.Marshal(args)
	is.Equal(string(out), string(want)+"\nline one\nline two\n")
	is.Equal(stderr.String(), "")

	cmd = launcherCommand(t, launcher, "echo:0", "--version")
	out, err = cmd.Output()
	is.NoErr(err)
	is.Equal(string(out), "[\"--version\"]\n")
}

// Without its platform package (npm was told to leave optional
// dependencies out), the launcher says which package is missing, and how to
// get it, and exits 1.
func TestLauncherWithoutItsPlatformPackage(t *testing.T) {
	is := is.New(t)
	h := hostTarget(t)
	launcher := installFake(t, releaseTargets(), false)
	var stderr bytes.Buffer
	cmd := launcherCommand(t, launcher, "echo:0")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	is.True(err != nil)
	is.Equal(cmd.ProcessState.ExitCode(), 1)
	is.Equal(string(out), "")
	is.True(strings.Contains(stderr.String(), "mcp-stdio: its binary package, "+h.npmPackage()+", is not installed")) // names the package
	is.True(strings.Contains(stderr.String(), "--omit=optional"))                                                     // says how it went missing
}

// On a platform without a release, the launcher says so, lists those there
// are, and points to building from source.
func TestLauncherOnAPlatformWithoutABuild(t *testing.T) {
	is := is.New(t)
	h := hostTarget(t)
	others := slices.DeleteFunc(releaseTargets(), func(t target) bool { return t == h })
	launcher := installFake(t, others, false)
	var stderr bytes.Buffer
	cmd := launcherCommand(t, launcher, "echo:0")
	cmd.Stderr = &stderr
	_, err := cmd.Output()
	is.True(err != nil)
	is.Equal(cmd.ProcessState.ExitCode(), 1)
	is.True(strings.Contains(stderr.String(), "there is no mcp-stdio build for "+h.npmOS()+"/"+h.npmCPU())) // names the platform
	is.True(strings.Contains(stderr.String(), "go install github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio@latest"))
	is.True(!strings.Contains(stderr.String(), h.npmOS()+"-"+h.npmCPU())) // not among those listed
}

// The launcher tells the binary its own process id, by which serve ends
// with it (MCP_STDIO_PARENT_PID).
func TestLauncherTellsTheBinaryItsPID(t *testing.T) {
	is := is.New(t)
	launcher := installFake(t, releaseTargets(), true)
	cmd := launcherCommand(t, launcher, "parent")
	out, err := cmd.Output()
	is.NoErr(err)
	pid := strconv.Itoa(cmd.Process.Pid)
	is.Equal(string(out), pid+" "+pid+"\n")
}
