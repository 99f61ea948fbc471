package main_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

// rawEraBlock is how many calls BenchmarkServeModernRaw makes on one era
// before it turns to the other: serve's CPU time is read around each
// block (from /proc, in clock ticks) and counted to the block's era.
const rawEraBlock = 100

// BenchmarkServeModernRaw measures serve's two eras without a client
// library: a raw HTTP client POSTs the same bytes every call (a 2026-07-28
// tools/call echo with its _meta and routing headers; a session-era one in
// an initialized session), b.N calls of each, in alternating blocks of
// rawEraBlock calls, through one serve whose children are the example
// server. What the go-sdk client costs in BenchmarkServeModern (most of
// that benchmark's CPU) is left out; the metrics are each era's
// throughput, p50 and serve's CPU time per call, and the ratio
// serve-2026/serve-throughput. Figures in BENCHMARKS.md, "serve at
// 2026-07-28":
//
//	go test -run '^$' -bench '^BenchmarkServeModernRaw$' -benchtime 4000x -count 5 ./cmd/mcp-stdio
func BenchmarkServeModernRaw(b *testing.B) {
	serve := startBenchGateway(b, gwServe, relayBinary(b), "", "")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	b.Cleanup(hc.CloseIdleConnections)
	want := []byte(serveBenchText)
	post := func(body []byte, hdr http.Header) http.Header {
		req, err := http.NewRequest(http.MethodPost, serve.url, bytes.NewReader(body))
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
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %s: %v\n%s", resp.StatusCode, out, err, serve.log.tail(30))
		}
		if !bytes.Contains(out, want) && !bytes.Contains(body, []byte(`"initialize"`)) {
			b.Fatalf("unexpected answer %s", out)
		}
		return resp.Header
	}
	base := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	modern := base.Clone()
	modern.Set("Mcp-Protocol-Version", "2026-07-28")
	modern.Set("Mcp-Method", "tools/call")
	modern.Set("Mcp-Name", "echo")
	session := base.Clone()
	hdr := post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+clientVersion+`","capabilities":{},"clientInfo":{"name":"bench-raw","version":"1"}}}`), session)
	session.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
	session.Set("Mcp-Protocol-Version", clientVersion)
	req, err := http.NewRequest(http.MethodPost, serve.url, bytes.NewReader([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	if err != nil {
		b.Fatal(err)
	}
	req.Header = session.Clone()
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	eras := []struct {
		name string
		body []byte
		hdr  http.Header
		cpu  time.Duration
		lat  []time.Duration
	}{
		{name: modernPath(gwServe), hdr: modern, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + serveBenchText + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench-raw","version":"1"}}}}`)},
		{name: gwServe, hdr: session, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + serveBenchText + `"}}}`)},
	}
	for range serveBenchWarmup {
		for _, e := range eras {
			post(e.body, e.hdr)
		}
	}
	b.ResetTimer()
	cpuOK := true
	for done := 0; done < b.N; done += rawEraBlock {
		n := min(rawEraBlock, b.N-done)
		for i := range eras {
			e := &eras[(done/rawEraBlock+i)%len(eras)]
			before, err1 := procCPU(serve.pid())
			for range n {
				t0 := time.Now()
				post(e.body, e.hdr)
				e.lat = append(e.lat, time.Since(t0))
			}
			after, err2 := procCPU(serve.pid())
			cpuOK = cpuOK && err1 == nil && err2 == nil
			e.cpu += after - before
		}
	}
	b.StopTimer()
	sums := make(map[string]latencies)
	for _, e := range eras {
		s := summarize(e.lat)
		sums[e.name] = s
		b.ReportMetric(s.perSecond, e.name+"-req/s")
		b.ReportMetric(us(s.p50), e.name+"-p50-µs")
		if cpuOK {
			b.ReportMetric(us(e.cpu)/float64(len(e.lat)), e.name+"-CPU-µs/call")
		}
	}
	if s := sums[gwServe]; s.perSecond > 0 {
		b.ReportMetric(sums[modernPath(gwServe)].perSecond/s.perSecond, modernPath(gwServe)+"/"+gwServe+"-throughput")
	}
}
