package transporttest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// CA is a certificate authority made for one test: it signs server
// certificates for the names a test's TLS servers answer as, so that a
// client can be shown to trust it (or not) the way it would a corporate
// or private CA.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM-encoded.
	PEM []byte
}

// NewCA makes a fresh CA valid for an hour.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mcp-stdio test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// WriteFile writes the CA certificate as a PEM file in a fresh temporary
// directory and returns its path.
func (ca *CA) WriteFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServerConfig returns a TLS server configuration whose certificate the
// CA signed for hosts (IP addresses or DNS names).
func (ca *CA) ServerConfig(t testing.TB, hosts ...string) *tls.Config {
	t.Helper()
	tmpl := leafTemplate(hosts[0], x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, key := ca.sign(t, tmpl)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// leafTemplate is the template of a certificate for cn, valid for an hour,
// for the use usage.
func leafTemplate(cn string, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

// sign makes a fresh key and the certificate of tmpl for it, signed by the
// CA, returning the certificate's DER bytes and the key.
func (ca *CA) sign(t testing.TB, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// ClientPool returns a pool holding the CA, for a TLS server that asks
// for client certificates the CA signed (tls.Config.ClientCAs).
func (ca *CA) ClientPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// WriteClientCertificate makes a client certificate for the name cn, signed
// by the CA, and writes it and its key as PEM files in a fresh temporary
// directory, returning their paths.
func (ca *CA) WriteClientCertificate(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	der, key := ca.sign(t, leafTemplate(cn, x509.ExtKeyUsageClientAuth))
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// ConnectProxy is a loopback HTTP proxy that serves CONNECT only, as an
// HTTPS_PROXY does, and records the targets it was asked for. Every
// target is dialled at Upstream when set (so that a test can name its
// server by a host name no resolver knows, which Go's proxy rules do not
// exempt as they exempt localhost and loopback addresses), else as asked.
type ConnectProxy struct {
	// URL is the proxy's URL, http://127.0.0.1:PORT.
	URL string
	// Upstream, when set, is the address every tunnel leads to.
	Upstream string

	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	targets []string
	conns   map[net.Conn]struct{}
}

// NewConnectProxy starts a CONNECT proxy on loopback; it stops when the
// test ends, its tunnels with it.
func NewConnectProxy(t testing.TB, upstream string) *ConnectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ConnectProxy{URL: "http://" + ln.Addr().String(), Upstream: upstream, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Targets returns the CONNECT targets asked for, in order.
func (p *ConnectProxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *ConnectProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records c so close can end it; false when the proxy is closing.
func (p *ConnectProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *ConnectProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c, true)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			p.tunnel(c)
		}()
	}
}

// tunnel serves one client connection: one CONNECT, then bytes both ways.
func (p *ConnectProxy) tunnel(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, req.Host)
	p.mu.Unlock()
	addr := req.Host
	if p.Upstream != "" {
		addr = p.Upstream
	}
	up, err := net.Dial("tcp", addr)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.track(up, true)
	defer p.track(up, false)
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, br) // what the client sent after the CONNECT, buffered or not
		up.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}()
	io.Copy(c, up)
	c.(*net.TCPConn).CloseWrite()
	<-done
}
