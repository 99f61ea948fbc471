package pipeline_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// relayOnce runs a relay to url with cfg's era, writes lines to its stdin
// one at a time, reading one answer after each, and returns the answers
// and the relay's log (at debug level).
func relayOnce(t *testing.T, url string, era mw.EraChoice, lines ...string) (answers []string, log string) {
	t.Helper()
	is := is.New(t)
	var logs syncBuffer
	stdinR, stdin := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{
			URL:       url,
			Transport: pipeline.TransportStreamable,
			Era:       era,
			Retry:     mw.RetryOptions{Attempts: 1},
			Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		}, stdinR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	for _, line := range lines {
		fmt.Fprintln(stdin, line)
		is.True(out.Scan())
		answers = append(answers, out.Text())
	}
	stdin.Close()
	<-done
	for out.Scan() {
		t.Errorf("more on stdout: %s", out.Text())
	}
	return answers, logs.String()
}

const (
	sessionInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`
	modernDiscover    = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
)

// A refused connection or a 401 says nothing of the era the server
// speaks (issue 23): the host gets the failure, and nothing is logged as
// an era, for either host.
func TestRelayRefusalIsNoEra(t *testing.T) {
	var methods []string
	var mu sync.Mutex
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m, err := frame.Parse(body); err == nil {
			mu.Lock()
			methods = append(methods, m.Method())
			mu.Unlock()
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer unauthorized.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/mcp"
	l.Close() // nothing listens there now
	ignore := goleak.IgnoreCurrent()

	for _, tc := range []struct {
		name, url, line string
		discover        bool // the probe goes first (a 2026-07-28 host)
	}{
		{"401, session-era host", unauthorized.URL, sessionInitialize, false},
		{"401, 2026-07-28 host", unauthorized.URL, modernDiscover, true},
		{"refused, session-era host", refused, sessionInitialize, false},
		{"refused, 2026-07-28 host", refused, modernDiscover, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			mu.Lock()
			methods = nil
			mu.Unlock()
			answers, log := relayOnce(t, tc.url, mw.EraAuto, tc.line)
			is.True(strings.Contains(answers[0], `"error"`)) // the failure is the answer
			is.True(!strings.Contains(log, "speaking"))      // no era claimed
			is.True(!strings.Contains(log, "session era"))
			if tc.discover {
				is.True(strings.Contains(log, "era not decided")) // the probe's failure, said as such
			}
			if tc.url == unauthorized.URL {
				mu.Lock()
				got := strings.Join(methods, ",")
				mu.Unlock()
				if tc.discover {
					is.Equal(got, "server/discover,server/discover") // the probe, then the host's own
				} else {
					is.Equal(got, "initialize") // no probe after a 401
				}
			}
		})
	}
	goleak.VerifyNone(t, ignore)
}
