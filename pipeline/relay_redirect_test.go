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
