package pipeline_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// flagRemedy names a flag for a redirect not followed, as the command
// line's Remedy does.
func flagRemedy(err error) string {
	var re *transport.RedirectError
	if errors.As(err, &re) {
		return "pass --follow-redirects"
	}
	return ""
}

// The relay's every request to a server that redirects to another origin
// — the era probe, initialize, a call — is refused: the host gets one
// error per request naming the target and what to do, a warning says so
// on stderr, and the target receives nothing.
func TestRelayRefusesARedirectToAnotherOrigin(t *testing.T) {
	for _, tr := range []string{pipeline.TransportAuto, pipeline.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			is := is.New(t)
			var reached atomic.Int32
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached.Add(1)
			}))
			defer target.Close()
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Location", target.URL+r.URL.Path)
				w.WriteHeader(http.StatusTemporaryRedirect)
			}))
			defer origin.Close()
			ignore := goleak.IgnoreCurrent()

			logs := &transporttest.SyncBuffer{}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{
					URL:       origin.URL + "/mcp",
					Transport: tr,
					Header:    http.Header{"Authorization": {"Bearer tok"}, "X-Api-Key": {"k"}},
					Remedy:    flagRemedy,
					Advice:    func(u *pipeline.Unreachable) string { return flagRemedy(u.Err) },
					Logger:    slog.New(slog.NewTextHandler(logs, nil)),
				}, inR, outW)
				_ = outW.Close()
			}()
			out := bufio.NewScanner(outR)
			fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"secret":"argument"}}}`)
			answers := map[string]string{}
			for range 2 {
				is.True(out.Scan())
				id := gjson.Get(out.Text(), "id").Raw
				_, dup := answers[id]
				is.True(!dup) // one answer per request
				answers[id] = gjson.Get(out.Text(), "error.message").String()
			}
			is.NoErr(inW.Close())
			is.True(!out.Scan()) // nothing more
			err := <-done
			if tr == pipeline.TransportSSE {
				is.True(err != nil) // the stream could not be used
			} else {
				is.NoErr(err)
			}
			for id, msg := range answers {
				is.True(strings.Contains(msg, target.URL+"/")) // names the target
				is.True(strings.Contains(msg, "--follow-redirects"))
				t.Logf("%s: %s", id, msg)
			}
			is.True(strings.Contains(logs.String(), "level=WARN"))
			is.True(strings.Contains(logs.String(), "--follow-redirects"))
			is.Equal(reached.Load(), int32(0))
			origin.CloseClientConnections()
			goleak.VerifyNone(t, ignore)
		})
	}
}

// A server that redirects only its GET stream elsewhere: the stream is
// not followed, the warning says what to do, and the calls go on.
func TestRelayRefusesTheGETStreamsRedirect(t *testing.T) {
	is := is.New(t)
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer target.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Location", target.URL+"/stream")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		case http.MethodDelete:
			return
		}
		body, _ := io.ReadAll(r.Body)
		id := gjson.GetBytes(body, "id").Raw
		if id == "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s-1")
		result := `{}`
		if gjson.GetBytes(body, "method").String() == "initialize" {
			result = `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}))
	defer origin.Close()

	logs := &transporttest.SyncBuffer{}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{
			URL:       origin.URL + "/mcp",
			Transport: pipeline.TransportStreamable,
			Era:       "session",
			Header:    http.Header{"Authorization": {"Bearer tok"}},
			Remedy:    flagRemedy,
			Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		}, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	is.True(out.Scan())
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The next request waits for the GET stream's first answer.
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","id":2,"result":{}}`)
	is.NoErr(inW.Close())
	is.True(!out.Scan())
	is.NoErr(<-done)
	is.True(strings.Contains(logs.String(), `level=WARN msg="the GET stream failed: the server redirected (HTTP 307) to `+target.URL+`/stream`))
	is.True(strings.Contains(logs.String(), "pass --follow-redirects"))
	is.Equal(reached.Load(), int32(0))
}

// --check against a server that redirects elsewhere says so on one line,
// with the target and the advice, on both transports.
func TestCheckExplainsARefusedRedirect(t *testing.T) {
	target := httptest.NewServer(http.NotFoundHandler())
	defer target.Close()
	origin := httptest.NewServer(http.RedirectHandler(target.URL+"/mcp", http.StatusPermanentRedirect))
	defer origin.Close()
	for _, tr := range []string{pipeline.TransportAuto, pipeline.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			is := is.New(t)
			var out strings.Builder
			_, err := pipeline.Check(context.Background(), pipeline.RelayConfig{
				URL:       origin.URL + "/mcp",
				Transport: tr,
				Advice:    func(u *pipeline.Unreachable) string { return flagRemedy(u.Err) },
			}, &out)
			is.True(err != nil)
			var re *transport.RedirectError
			is.True(errors.As(err, &re))
			line := out.String()
			is.Equal(strings.Count(strings.TrimSpace(line), "\n"), 0) // one line
			is.True(strings.Contains(line, "the server redirected (HTTP 308) to "+target.URL+"/mcp"))
			is.True(strings.Contains(line, "; pass --follow-redirects"))
			is.True(!strings.Contains(line, "is this the SSE URL")) // not mistaken for a missing stream
		})
	}
}
