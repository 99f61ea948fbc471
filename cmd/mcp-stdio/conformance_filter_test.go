package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// The test binary doubles as a stdio filter that makes a dual-era server a
// session-era-only one (see the init function in e2e_main_test.go):
//
//	<test binary> mcp-stdio-session-era-filter SERVER [ARG...]
//	    runs SERVER as its child and stands between its own stdin and
//	    stdout and the child's: every server/discover request is answered
//	    by the filter itself with -32601 (method not found), as a server
//	    written before 2026-07-28 answers it; every other line passes in
//	    either direction byte for byte. The child's stderr is the
//	    filter's.
//
// Behind it the go-sdk v1.8.0 conformance server looks like a server of
// the session era only: serve's probe finds no 2026-07-28 in it and
// initializes it at 2025-11-25, so the server's 2026-07-28 tools that ask
// for input (elicitation, sampling, roots) send real session-era requests,
// which serve must turn into input_required results for a 2026-07-28
// client. It is the session-era-filtered child of the conformance runs at
// 2026-07-28 (confModernServerRuns): a session-era child with every tool
// the suite calls.
const confFilterArg = "mcp-stdio-session-era-filter"

// confFilterMain is the test binary run as confFilterArg with args.
func confFilterMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: %s SERVER [ARG...]\n", confFilterArg)
		return 2
	}
	child := exec.Command(args[0], args[1:]...)
	child.Stderr = stderr
	toChild, err := child.StdinPipe()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fromChild, err := child.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := child.Start(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	out := &confLineWriter{w: stdout}
	copied := make(chan error, 1)
	go func() { copied <- confCopyLines(out, fromChild) }()
	ferr := confFilterDiscover(stdin, toChild, out)
	_ = toChild.Close() // the child's stdin ends with ours (or when it stopped reading)
	cerr := <-copied
	werr := child.Wait()
	for _, err := range []error{ferr, cerr} {
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", confFilterArg, err)
		}
	}
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		return exit.ExitCode()
	case werr != nil:
		fmt.Fprintf(stderr, "%s: %v\n", confFilterArg, werr)
		return 1
	}
	return 0
}

// confFilterDiscover copies the lines of in to toChild until in ends,
// except the server/discover requests, which it answers on out with
// -32601 as a server of the session era does. It returns nil at the end
// of in, or the first write error.
func confFilterDiscover(in io.Reader, toChild io.Writer, out *confLineWriter) error {
	r := bufio.NewReader(in)
	for {
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 {
			if id, ok := confDiscoverID(line); ok {
				answer := `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"Method not found"}}` + "\n"
				if err := out.WriteLine([]byte(answer)); err != nil {
					return err
				}
			} else if _, err := toChild.Write(line); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// confDiscoverID returns the raw id of line when it is a server/discover
// request.
func confDiscoverID(line []byte) (string, bool) {
	if !gjson.ValidBytes(line) {
		return "", false
	}
	res := gjson.GetManyBytes(line, "method", "id")
	if res[0].Str != "server/discover" || !res[1].Exists() {
		return "", false
	}
	return res[1].Raw, true
}

// confCopyLines copies the lines of r to out, each whole, until r ends.
func confCopyLines(out *confLineWriter, r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			if err := out.WriteLine(line); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// confLineWriter writes whole lines to w, one at a time, so that the
// filter's own answers never split a line of the child's.
type confLineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// WriteLine writes line to w in one piece.
func (l *confLineWriter) WriteLine(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(line)
	return err
}

// TestConfFilterDiscover: the filter answers server/discover requests
// itself with -32601 under their raw ids, and passes every other line,
// notifications named server/discover and lines that are not JSON
// included, to the child byte for byte.
func TestConfFilterDiscover(t *testing.T) {
	is := is.New(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":"probe-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0", "id":1,  "method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","method":"server/discover"}`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, // no newline at the end
	}, "\n")
	var toChild, out bytes.Buffer
	is.NoErr(confFilterDiscover(strings.NewReader(in), &toChild, &confLineWriter{w: &out}))
	is.Equal(toChild.String(), `{"jsonrpc":"2.0", "id":1,  "method":"initialize","params":{}}`+"\n"+
		`{"jsonrpc":"2.0","method":"server/discover"}`+"\n"+
		"not json at all\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	is.Equal(out.String(), `{"jsonrpc":"2.0","id":"probe-1","error":{"code":-32601,"message":"Method not found"}}`+"\n"+
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`+"\n")
}

// TestConfFilterProcess: run as a program in front of a child, the filter
// answers server/discover itself, passes the rest to the child and the
// child's lines back, and exits with the child's status once its stdin
// ends.
func TestConfFilterProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	is := is.New(t)
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to stand for the child")
	}
	self, err := os.Executable()
	is.NoErr(err)
	cmd := exec.Command(self, confFilterArg, cat)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	is.NoErr(err) // exits 0, as the child did
	lines := strings.SplitAfter(string(out), "\n")
	// The two lines come from two writers; their order is not fixed.
	is.Equal(len(lines), 3) // two lines and the empty rest
	is.True(strings.Contains(string(out), `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`+"\n"))
	is.True(strings.Contains(string(out), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"))
	is.Equal(stderr.String(), "")
}
