package exampleserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wait bounds every wait of a test; it is a safety net against a hung test,
// never a synchronisation.
const wait = 20 * time.Second

// conn drives Serve in-process over pipes, playing the client.
type conn struct {
	t      testing.TB
	stdin  *io.PipeWriter
	lines  chan string // every line written to stdout, in order
	served chan error  // Serve's result
	closed bool
}

// start runs Serve with o and returns the client's end. The test's cleanup
// closes stdin and waits for Serve to return.
func start(t testing.TB, o Options) *conn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &conn{t: t, stdin: inW, lines: make(chan string, 1024), served: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, o)
		outW.Close()
		inR.Close()
		c.served <- err
	}()
	go c.readStdout(outR)
	t.Cleanup(func() { c.finish() })
	return c
}

// readStdout checks that every byte on stdout belongs to a valid one-line
// JSON-RPC message ending in exactly "\n", and hands the lines over.
func (c *conn) readStdout(r io.Reader) {
	defer close(c.lines)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if perr := checkLine(line); perr != nil {
				c.t.Errorf("stdout impure: %v", perr)
			}
			c.lines <- strings.TrimSuffix(string(line), "\n")
		}
		if err != nil {
			return
		}
	}
}

// checkLine checks one stdout line, newline included.
func checkLine(line []byte) error {
	body, ok := bytes.CutSuffix(line, []byte("\n"))
	switch {
	case !ok:
		return fmt.Errorf("line without a final newline: %.200q", line)
	case len(body) == 0:
		return errors.New("empty line")
	case bytes.ContainsAny(body, "\r\n"):
		return fmt.Errorf("line break inside a message: %.200q", line)
	case !json.Valid(body):
		return fmt.Errorf("not JSON: %.200q", line)
	}
	m := gjson.ParseBytes(body)
	if m.IsArray() { // a batch's answers
		for _, e := range m.Array() {
			if !e.IsObject() || e.Get("jsonrpc").String() != "2.0" {
				return fmt.Errorf("not a batch of JSON-RPC 2.0 messages: %.200q", line)
			}
		}
		return nil
	}
	if !m.IsObject() || m.Get("jsonrpc").String() != "2.0" {
		return fmt.Errorf("not a JSON-RPC 2.0 message: %.200q", line)
	}
	return nil
}

// checkStdout checks a whole stdout capture.
func checkStdout(out []byte) error {
	for len(out) > 0 {
		i := bytes.IndexByte(out, '\n')
		if i < 0 {
			return checkLine(out)
		}
		if err := checkLine(out[:i+1]); err != nil {
			return err
		}
		out = out[i+1:]
	}
	return nil
}

// send writes one line to the server's stdin.
func (c *conn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("writing stdin: %v", err)
	}
}

// sendf is send with fmt formatting.
func (c *conn) sendf(format string, args ...any) { c.t.Helper(); c.send(fmt.Sprintf(format, args...)) }

// recv returns the next stdout message.
func (c *conn) recv() gjson.Result {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("stdout ended")
		}
		return gjson.Parse(line)
	case <-time.After(wait):
		c.t.Fatal("no message on stdout")
	}
	return gjson.Result{}
}

// roundTrip sends a request and returns the next message, which must answer
// it.
func (c *conn) roundTrip(line string) gjson.Result {
	c.t.Helper()
	c.send(line)
	m := c.recv()
	if want := gjson.Get(line, "id").Raw; m.Get("id").Raw != want {
		c.t.Fatalf("expected the answer to id %s, got %s", want, m.Raw)
	}
	return m
}

// initialize performs the session-era handshake at version with capabilities.
func (c *conn) initialize(version, caps string) gjson.Result {
	c.t.Helper()
	m := c.roundTrip(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":` + caps + `,"clientInfo":{"name":"test","version":"1"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

// finish closes stdin and returns Serve's result and what stdout still
// carried. It is idempotent (later calls return nil, nil).
func (c *conn) finish() (error, []string) {
	if c.closed {
		return nil, nil
	}
	c.closed = true
	c.stdin.Close()
	var rest []string
	timeout := time.After(wait)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				select {
				case err := <-c.served:
					return err, rest
				case <-timeout:
					c.t.Errorf("Serve did not return")
					return nil, rest
				}
			}
			rest = append(rest, line)
		case <-timeout:
			c.t.Errorf("stdout did not end after stdin closed")
			return nil, rest
		}
	}
}

// statelessMeta is the _meta of a 2026-07-28 request with capabilities caps.
func statelessMeta(caps string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`
}

// get reads a path with a reserved _meta key in it.
func metaKey(key string) string { return gjson.Escape(key) }

// newTestLogger logs everything to w as text.
func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
