package transport

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkHTTPServers measures one keep-alive client's sequential
// requests (a 40-byte POST, a 36-byte JSON answer from a handler whose
// stack is about 12 KB deep, as a pipeline's is) against http.Server and
// HTTP1Server, side by side: a request's round trip over loopback, and
// the allocations of both ends.
//
//	go test -run '^$' -bench HTTPServers -count 3 ./transport
func BenchmarkHTTPServers(b *testing.B) {
	servers := []struct {
		name  string
		serve func(ln net.Listener, h http.Handler) (closeIt func() error, served chan error)
	}{
		{"server=net-http", func(ln net.Listener, h http.Handler) (func() error, chan error) {
			s := &http.Server{Handler: h}
			served := make(chan error, 1)
			go func() { served <- s.Serve(ln) }()
			return s.Close, served
		}},
		{"server=http1", func(ln net.Listener, h http.Handler) (func() error, chan error) {
			s := &HTTP1Server{Handler: h}
			served := make(chan error, 1)
			go func() { served <- s.Serve(ln) }()
			return s.Close, served
		}},
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		deepAnswer(40, w)
	})
	request := "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n" + strings.Repeat(" ", 40)
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			closeIt, served := s.serve(ln, handler)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReader(c)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := io.WriteString(c, request); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.StopTimer()
			c.Close()
			_ = closeIt()
			<-served
		})
	}
}

// deepAnswer writes the answer from n frames of 256 bytes down.
//
//go:noinline
func deepAnswer(n int, w http.ResponseWriter) byte {
	var pad [256]byte
	if n == 0 {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		return pad[0]
	}
	return deepAnswer(n-1, w) + pad[n%len(pad)]
}
