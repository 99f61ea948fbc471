package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// An https server behind a corporate network: reached only through the
// HTTPS_PROXY (a real CONNECT proxy), with a certificate from a CA the
// system does not know. The client tunnels through the proxy and trusts
// the CA given in TLSClientConfig. The server is named mcp.test, a name
// no resolver knows: the proxy's rules never send localhost or loopback
// addresses through a proxy (as net/http's do not), so the proxy maps
// the name to the server's loopback address, as a real proxy resolves
// names the client cannot.
func TestHTTPSThroughConnectProxy(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	srv.TLS = ca.ServerConfig(t, "mcp.test")
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy := transporttest.NewConnectProxy(t, srv.Listener.Addr().String())
	pool := x509.NewCertPool()
	is.True(pool.AppendCertsFromPEM(ca.PEM))

	c := NewHTTPClient(HTTPOptions{
		Getenv:          env(map[string]string{"HTTPS_PROXY": proxy.URL, "NO_PROXY": "other.test"}),
		TLSClientConfig: &tls.Config{RootCAs: pool},
	})
	defer c.CloseIdleConnections()
	sink := newCollector()
	sc := &StreamableClient{URL: "https://mcp.test:" + port + "/mcp", Client: c, ToClient: sink}
	is.NoErr(sc.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})
	is.Equal(proxy.Targets(), []string{"mcp.test:" + port}) // tunnelled, not sent directly

	// Without the CA the tunnel opens but the certificate is refused, as
	// an unknown authority (what the relay's advice about --ca-file keys on).
	plain := NewHTTPClient(HTTPOptions{Getenv: env(map[string]string{"HTTPS_PROXY": proxy.URL})})
	defer plain.CloseIdleConnections()
	sc = &StreamableClient{URL: "https://mcp.test:" + port + "/mcp", Client: plain, ToClient: newCollector()}
	err := sc.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	var unknown x509.UnknownAuthorityError
	is.True(errors.As(err, &unknown))
	var se *frame.SendError
	is.True(errors.As(err, &se) && !se.Sent) // refused before anything was sent
}
