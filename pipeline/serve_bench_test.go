//go:build linux

package pipeline

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// BenchmarkServeEras is serve's cost per sequential tools/call echo in
// each era, in process: serve's handler on a loopback server, a raw HTTP
// client that sends fixed bytes, and the go-sdk server as the child (its
// own process, outside a CPU profile of the benchmark). era=2026 is a
// 2026-07-28 request (headers and _meta, no session) served by the pooled
// child; era=session a request in an initialized session. Profile serve's
// side of either with
//
//	go test -run '^$' -bench 'BenchmarkServeEras/era=2026' -cpuprofile cpu.out ./pipeline
func BenchmarkServeEras(b *testing.B) {
	child := transporttest.Command("sdk-server")
	srv, err := NewServer(ServeConfig{Command: child.Args, Env: child.Env, CheckHost: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	hc := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			b.Errorf("close: %v", err)
		}
		ts.Close()
		hc.CloseIdleConnections()
	})
	url := ts.URL + DefaultServePath
	post := func(body []byte, hdr http.Header) (http.Header, []byte) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header = hdr.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode/100 != 2 {
			b.Fatalf("%d %s: %v", resp.StatusCode, out, err)
		}
		return resp.Header, out
	}
	base := http.Header{"Content-Type": {"application/json"}, "Accept": {acceptBoth}}

	modern := base.Clone()
	modern.Set("Mcp-Protocol-Version", "2026-07-28")
	modern.Set("Mcp-Method", "tools/call")
	modern.Set("Mcp-Name", "echo")
	modernBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, serve"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)

	session := base.Clone()
	hdr, _ := post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`), session)
	session.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
	session.Set("Mcp-Protocol-Version", "2025-11-25")
	post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), session)
	sessionBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, serve"}}}`)

	want := []byte(`hello, serve`)
	for _, era := range []struct {
		name string
		body []byte
		hdr  http.Header
	}{{"2026", modernBody, modern}, {"session", sessionBody, session}} {
		b.Run("era="+era.name, func(b *testing.B) {
			for range 50 { // the pooled child started, both paths warm
				post(era.body, era.hdr)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, out := post(era.body, era.hdr); !bytes.Contains(out, want) {
					b.Fatalf("unexpected answer %s", out)
				}
			}
		})
	}
}
