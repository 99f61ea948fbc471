package transporttest

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// CutProxy forwards loopback TCP connections to an HTTP server, for tests
// of connections that die unnoticed (a NAT that forgot them, a laptop gone
// to sleep). Cut closes the client's side of the connections carrying a
// method's request and keeps their server side open, reading and dropping
// whatever the server writes: the client sees its connection break, the
// server sees nothing. A client that closes its side does not close the
// server's either; every server side is closed when the test ends.
type CutProxy struct {
	// URL is the server's URL with the proxy's address.
	URL string

	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []*proxiedConn
	wg    sync.WaitGroup
}

// proxiedConn is one connection through a CutProxy.
type proxiedConn struct {
	client, server net.Conn
	method         string // of the first request, once read
	cut            bool
}

// NewCutProxy starts a proxy to the server at rawURL; it stops, and
// closes every connection, when t ends.
func NewCutProxy(t testing.TB, rawURL string) *CutProxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, target: u.Host}
	u.Host = ln.Addr().String()
	p.URL = u.String()
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.client.Close()
			c.server.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *CutProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxiedConn{client: client, server: server}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Go(func() { p.up(c) })
		p.wg.Go(func() { p.down(c) })
	}
}

// up copies the client's bytes to the server, noting the first request's
// method. It never closes the server's side: a client gone must not end
// the request at the server.
func (p *CutProxy) up(c *proxiedConn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if c.method == "" {
				c.method, _, _ = strings.Cut(string(buf[:n]), " ")
			}
			p.mu.Unlock()
			if _, werr := c.server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// down copies the server's bytes to the client until the connection is
// cut, then drops them, until the server closes its side.
func (p *CutProxy) down(c *proxiedConn) {
	defer c.client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := c.cut
			p.mu.Unlock()
			if !cut {
				_, _ = c.client.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut breaks the client's side of every open connection that carries a
// request of method (GET, POST, …), and reports how many it broke.
func (p *CutProxy) Cut(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.conns {
		if c.method == method && !c.cut {
			c.cut = true
			c.client.Close()
			n++
		}
	}
	return n
}
