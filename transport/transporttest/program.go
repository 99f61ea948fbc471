package transporttest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// programEnv is the environment variable that names the program a test
// binary runs as (see RunProgram).
const programEnv = "MCP_STDIO_TEST_PROGRAM"

// raceEnv keeps a child built with -race from sleeping a second at exit;
// a race it reports still fails it, through its exit status (66).
const raceEnv = "GORACE=atexit_sleep_ms=0"

// registered holds the names of the programs passed to RunProgram in this
// process, so that Command and SetProgramEnv refuse a name no call knows.
var registered sync.Map // name → struct{}

// RunProgram lets the test binary double as the child programs its tests
// start, each known by a name: run as one of them, the binary runs that
// program instead of the tests. Call it from an init function of the test
// package, so that it runs before TestMain and before any test flag is
// parsed:
//
//	func init() {
//		transporttest.RunProgram(map[string]func(args []string) int{
//			"server": testServer,
//		})
//	}
//
// A program is selected in one of two ways:
//
//   - by the environment, which [Command] and [SetProgramEnv] set up: the
//     program gets the command-line arguments (without the executable's
//     name). The selection is inherited by the processes the program
//     starts, unless they are started with Command as another program.
//   - by the first command-line argument, for a test binary started by
//     code that builds the command line itself but not the environment
//     (a $BROWSER, a child that serve starts as "<executable>
//     example-server"): the program gets the arguments after its name.
//     This is not consulted when the environment names a program. The
//     names of such programs must not look like arguments the tests
//     themselves are given.
//
// When one of programs is selected, RunProgram runs it and exits with the
// status it returns (a program may also end the process itself).
// Otherwise it returns, and the tests run. Several calls in one test binary
// (its package's tests and its external _test package's) each run only
// the programs they are given, so a name must be unique within a binary;
// Command and SetProgramEnv refuse a name that no call was given.
func RunProgram(programs map[string]func(args []string) int) {
	for name := range programs {
		registered.Store(name, struct{}{})
	}
	if name := os.Getenv(programEnv); name != "" {
		if run, ok := programs[name]; ok {
			os.Exit(run(os.Args[1:]))
		}
		return
	}
	if len(os.Args) > 1 {
		if run, ok := programs[os.Args[1]]; ok {
			os.Exit(run(os.Args[2:]))
		}
	}
}

// Command returns a command that runs the test binary as the program name
// (see RunProgram) with args. Its Path and Args[0] are the test binary's
// absolute path, so Args alone is a complete command line; its Env is the
// environment of this process with the program's selection and
// GORACE=atexit_sleep_ms=0 added.
//
// It panics if no call to RunProgram in this process was given name, or
// if the test binary's path cannot be found.
func Command(name string, args ...string) *exec.Cmd {
	if !known(name) {
		panic(fmt.Sprintf("transporttest: no program %q was given to RunProgram", name))
	}
	exe, err := os.Executable()
	if err != nil {
		panic(fmt.Sprintf("transporttest: the test binary: %v", err))
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), programEnv+"="+name, raceEnv)
	return cmd
}

// ArgCommand returns a command that runs the test binary as the program
// name (see RunProgram) chosen by its first argument, with args after it:
// its Args are the test binary's absolute path, name and args. Its Env is
// the environment of this process without any program selection, with
// GORACE=atexit_sleep_ms=0 added; the processes it starts in turn, with
// that environment, choose their programs the same way. It is for a
// process that hands its environment on to another test program it starts
// (a supervisor and its server), which an environment naming a program
// would make run as the first one too.
//
// It panics if no call to RunProgram in this process was given name, or
// if the test binary's path cannot be found.
func ArgCommand(name string, args ...string) *exec.Cmd {
	if !known(name) {
		panic(fmt.Sprintf("transporttest: no program %q was given to RunProgram", name))
	}
	exe, err := os.Executable()
	if err != nil {
		panic(fmt.Sprintf("transporttest: the test binary: %v", err))
	}
	cmd := exec.Command(exe, append([]string{name}, args...)...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, programEnv+"=")
	}), raceEnv)
	return cmd
}

// SetProgramEnv makes the processes that code under test starts as the
// test binary during t, with this process's environment, run as the
// program name (see RunProgram) — for code that starts os.Executable()
// itself, such as serve without a command. Like Command, it adds
// GORACE=atexit_sleep_ms=0 for them. It sets the environment with
// t.Setenv, so t and its ancestors must not be parallel tests.
//
// It fails t if no call to RunProgram in this process was given name.
func SetProgramEnv(t testing.TB, name string) {
	t.Helper()
	if !known(name) {
		t.Fatalf("transporttest: no program %q was given to RunProgram", name)
	}
	t.Setenv(programEnv, name)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
}

// known reports whether a call to RunProgram was given name.
func known(name string) bool {
	_, ok := registered.Load(name)
	return ok
}
