package transporttest_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The programs of this test binary (see RunProgram).
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		// "args" prints its arguments and exits 7.
		"args": func(args []string) int {
			fmt.Printf("%q\n", args)
			return 7
		},
		// "cat" copies stdin to stdout until stdin ends.
		"cat": func([]string) int {
			io.Copy(os.Stdout, os.Stdin)
			return 0
		},
	})
}

func TestCommandRunsTheProgram(t *testing.T) {
	is := is.New(t)
	cmd := transporttest.Command("args", "a b", "c")
	is.Equal(cmd.Args[0], cmd.Path)
	out, err := cmd.Output()
	var ee *exec.ExitError
	is.True(errors.As(err, &ee))
	is.Equal(ee.ExitCode(), 7)
	is.Equal(string(out), `["a b" "c"]`+"\n")
	is.True(slices.Contains(cmd.Env, "GORACE=atexit_sleep_ms=0"))
}

// A program the environment names runs with all the arguments, even one
// that names another program.
func TestTheEnvironmentComesFirst(t *testing.T) {
	is := is.New(t)
	out, _ := transporttest.Command("args", "cat").Output()
	is.Equal(string(out), `["cat"]`+"\n")
}

// A program can be chosen by the first argument, for command lines built
// by someone else; it gets the arguments after its name.
func TestTheFirstArgumentNamesAProgram(t *testing.T) {
	is := is.New(t)
	exe, err := os.Executable()
	is.NoErr(err)
	out, _ := exec.Command(exe, "args", "x").Output()
	is.Equal(string(out), `["x"]`+"\n")
}

// ArgCommand chooses the program by the first argument, with an
// environment that names none, so that what it starts chooses its own.
func TestArgCommandRunsTheProgram(t *testing.T) {
	is := is.New(t)
	t.Setenv("MCP_STDIO_TEST_PROGRAM", "cat") // as if this process were one
	cmd := transporttest.ArgCommand("args", "a b")
	is.Equal(cmd.Args[0], cmd.Path)
	is.Equal(cmd.Args[1:], []string{"args", "a b"})
	out, _ := cmd.Output()
	is.Equal(string(out), `["a b"]`+"\n")
	is.True(!slices.ContainsFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "MCP_STDIO_TEST_PROGRAM=") }))
	is.True(slices.Contains(cmd.Env, "GORACE=atexit_sleep_ms=0"))
}

func TestCommandRefusesAnUnknownProgram(t *testing.T) {
	is := is.New(t)
	defer func() {
		r := recover()
		is.True(r != nil)
		is.True(strings.Contains(fmt.Sprint(r), `no program "nope"`))
	}()
	transporttest.Command("nope")
}
