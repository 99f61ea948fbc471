package transport

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// acceptAll accepts from ln until it fails and hands each connection on.
func acceptAll(ln net.Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 16)
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}

// next returns the next connection accepted.
func next(t *testing.T, accepted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(serverTestWait):
		t.Fatal("no connection accepted")
		return nil
	}
}

// limitedListener listens on loopback with LimitConnections(max), logging
// to log, and accepts in the background.
func limitedListener(t *testing.T, max int, log io.Writer) (string, <-chan net.Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitConnections(inner, max, slog.New(slog.NewTextHandler(log, nil)))
	accepted := acceptAll(ln)
	t.Cleanup(func() {
		ln.Close()
		for range accepted {
		}
	})
	return inner.Addr().String(), accepted
}

const refusalBody = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many connections (at most 2); try again later"}}`

// Beyond the cap, a connection gets an immediate 503 and is closed; those
// within are not disturbed, and closing one makes room. A flood of
// refusals is logged once.
func TestLimitConnections(t *testing.T) {
	is := is.New(t)
	var logs transporttest.SyncBuffer
	addr, accepted := limitedListener(t, 2, &logs)
	a := dialRaw(t, addr)
	sa := next(t, accepted)
	b := dialRaw(t, addr)
	sb := next(t, accepted)

	refused := func() {
		t.Helper()
		c := dialRaw(t, addr)
		_, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
		is.NoErr(err)
		br := bufio.NewReader(c)
		resp, got := transporttest.ReadResponse(t, br)
		is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
		is.True(resp.Close)
		is.Equal(resp.Header.Get("Retry-After"), "1")
		is.Equal(resp.Header.Get("Content-Type"), "application/json")
		is.Equal(got, refusalBody)
		is.True(transporttest.ClosedByPeer(br))
	}
	refused()

	// The connections within the cap still carry bytes both ways.
	for _, pair := range [][2]net.Conn{{a, sa}, {sb, b}} {
		_, err := pair[0].Write([]byte("ping"))
		is.NoErr(err)
		got := make([]byte, 4)
		_, err = io.ReadFull(pair[1], got)
		is.NoErr(err)
		is.Equal(string(got), "ping")
	}

	for range 5 {
		refused()
	}
	is.Equal(strings.Count(logs.String(), "refusing connections"), 1) // one line for the flood
	is.True(strings.Contains(logs.String(), "max=2"))

	sa.Close() // makes room at once
	d := dialRaw(t, addr)
	sd := next(t, accepted)
	_, err := d.Write([]byte("pong"))
	is.NoErr(err)
	got := make([]byte, 4)
	_, err = io.ReadFull(sd, got)
	is.NoErr(err)
	is.Equal(string(got), "pong")
}

// While 64 refusals are under way, a further connection is closed at once,
// without an answer.
func TestLimitConnectionsBoundsTheRefusals(t *testing.T) {
	is := is.New(t)
	addr, accepted := limitedListener(t, 1, io.Discard)
	dialRaw(t, addr)
	next(t, accepted)
	for range maxRefusing {
		dialRaw(t, addr) // sends nothing: its refusal waits for a request head
	}
	c := dialRaw(t, addr)
	io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
	got, _ := io.ReadAll(c) // EOF, or a reset: the request was never read
	is.Equal(len(got), 0)
}

// FuzzHeadScanner feeds arbitrary bytes, split at an arbitrary point, to
// the scanner for the end of a request head: it must find the end exactly
// when the bytes hold an empty line, however they are split.
func FuzzHeadScanner(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\nbody",
		"POST / HTTP/1.1\r\nA: b\r\n\r",
		"\r\n\r\n",
		"a\n\r\r\n",
		"a\r\r\n\n",
		"",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		want := bytes.Contains(in, []byte("\n\n")) || bytes.Contains(in, []byte("\n\r\n"))
		var whole headScanner
		if got := whole.feed(in); got != want {
			t.Fatalf("whole %q: %v, want %v", in, got, want)
		}
		i := int(cut) % (len(in) + 1)
		var split headScanner
		first := split.feed(in[:i])
		if got := split.feed(in[i:]); got != want || (first && !want) {
			t.Fatalf("split %q at %d: %v, want %v", in, i, got, want)
		}
		if !readHeadOf(in) && want && len(in) <= refuseHeadMax {
			t.Fatalf("readHead missed the end of %q", in)
		}
	})
}

// readHeadOf runs readHead over in, delivered a byte at a time.
func readHeadOf(in []byte) bool {
	return readHead(&oneByteReader{in})
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}
