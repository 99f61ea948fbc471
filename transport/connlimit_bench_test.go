package transport

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
)

// idleConns is how many connections BenchmarkIdleConnectionMemory holds.
const idleConns = 1000

// BenchmarkIdleConnectionMemory measures what a connection costs the
// process while it is open and silent, under each server serve could run
// (server=http1: HTTP1Server, serve's; server=net-http: http.Server),
// through LimitConnections with its ConnState, ConnContext and Handler:
// the Go heap and goroutine stacks in use after a GC, per connection,
// over 1,000 loopback connections, first silent since their accept
// (B/silent-conn), then after one request each, idle between requests
// (B/idle-conn). The client ends, in the same process, are counted too (a
// net.Conn each, a few hundred bytes): the figures are an upper bound.
// Run with -benchtime 1x:
//
//	go test -run '^$' -bench IdleConnectionMemory -benchtime 1x ./transport
func BenchmarkIdleConnectionMemory(b *testing.B) {
	for _, kind := range []string{serverHTTP1, serverNetHTTP} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				idleConnectionMemory(b, kind)
			}
		})
	}
}

// idleConnectionMemory is one run of BenchmarkIdleConnectionMemory.
func idleConnectionMemory(b *testing.B, kind string) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ln := LimitConnections(inner, 2*idleConns, nil)
	stop := serveLimitedUntil(b, kind, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer stop()
	addr := inner.Addr().String()

	base := inUse()
	conns := make([]net.Conn, idleConns)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", addr); err != nil {
			b.Fatal(err)
		}
	}
	for ln.Open() < idleConns { // every one accepted: the server holds them all
		runtime.Gosched()
	}
	silent := inUse()
	buf := make([]byte, 4096)
	for _, c := range conns {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64), nil)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
	idle := inUse()
	b.ReportMetric(float64(silent-base)/idleConns, "B/silent-conn")
	b.ReportMetric(float64(idle-base)/idleConns, "B/idle-conn")
	for _, c := range conns {
		c.Close()
	}
}

// inUse returns the heap and stack bytes in use after a GC.
func inUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
