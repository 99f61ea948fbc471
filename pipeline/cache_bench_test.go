package pipeline_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// BenchmarkRelayToolsList is the latency of a host's tools/list through
// the whole relay (stdin line to stdout line) against a loopback
// Streamable HTTP server whose result (20 tools) carries a ttlMs of an
// hour: answered by the response cache, and with NoCache, by the server.
func BenchmarkRelayToolsList(b *testing.B) {
	result := []byte(`{"tools":[`)
	for i := range 20 {
		if i > 0 {
			result = append(result, ',')
		}
		result = fmt.Appendf(result, `{"name":"tool_%d","description":"Does thing number %d for the caller, with the options below.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"count":{"type":"integer","minimum":1}},"required":["path"]}}`, i, i)
	}
	result = append(result, `],"ttlMs":3600000,"cacheScope":"public","resultType":"complete"}`...)
	for _, tt := range []struct {
		name    string
		noCache bool
	}{{"cache-hit", false}, {"no-cache", true}} {
		b.Run(tt.name, func(b *testing.B) {
			var posts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				m, err := frame.Parse(body)
				if err != nil || m.Kind() != frame.Request {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				posts.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(frame.ResultResponse(m.ID(), result).Bytes())
			}))
			defer srv.Close()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{URL: srv.URL, Transport: pipeline.TransportStreamable, NoCache: tt.noCache}, inR, outW)
				_ = outW.Close()
			}()
			out := bufio.NewScanner(outR)
			out.Buffer(nil, 1<<20)
			line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			ask := func() {
				if _, err := inW.Write(line); err != nil {
					b.Fatal(err)
				}
				if !out.Scan() {
					b.Fatal("no answer")
				}
			}
			ask() // the first is the server's in both cases
			b.SetBytes(int64(len(result)))
			for b.Loop() {
				ask()
			}
			_ = inW.Close()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			if n := posts.Load(); !tt.noCache && n != 1 {
				b.Fatalf("%d POSTs with the cache", n)
			}
		})
	}
}
