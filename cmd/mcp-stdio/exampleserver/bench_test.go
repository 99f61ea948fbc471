package exampleserver

import (
	"strings"
	"testing"
)

// BenchmarkEras is the server's cost per sequential tools/call echo in
// each era, in process over pipes: era=2026 a 2026-07-28 request (the
// envelope in params._meta, a minted id such as serve's pooled child
// receives), era=session a request on an initialized session. Profile
// either with
//
//	go test -run '^$' -bench 'BenchmarkEras/era=2026' -cpuprofile cpu.out ./cmd/mcp-stdio/exampleserver
func BenchmarkEras(b *testing.B) {
	for _, era := range []struct {
		name, call string
		init       bool
	}{
		{"2026", `{"jsonrpc":"2.0","id":"mcp-stdio/serve/AbCdEfGhIjKlMnOp/12345","method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, serve"},"_meta":` + statelessMeta(`{}`) + `}}`, false},
		{"session", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, serve"}}}`, true},
	} {
		b.Run("era="+era.name, func(b *testing.B) {
			c := start(b, Options{})
			if era.init {
				c.initialize("2025-11-25", `{}`)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := c.roundTrip(era.call); !strings.Contains(r.Raw, "hello, serve") {
					b.Fatalf("unexpected answer %s", r.Raw)
				}
			}
		})
	}
}
