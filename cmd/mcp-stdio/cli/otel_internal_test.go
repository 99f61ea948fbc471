package cli

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// collected is what a loopback collector received: one entry per POST,
// the request's URL as the collector saw it and the client certificate's
// common name, if any.
type collected struct {
	url, client string
}

// newCollector starts a collector that records every POST and answers 200.
func newCollector(t *testing.T, start func(*httptest.Server)) (*httptest.Server, <-chan collected) {
	t.Helper()
	got := make(chan collected, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := collected{url: r.URL.String()}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			c.client = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		got <- c
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the tests'
	start(srv)
	t.Cleanup(srv.Close)
	return srv, got
}

// exportOne sends one span through the exporter the environment env asks
// for and shuts it down, returning the warnings logged.
func exportOne(t *testing.T, env map[string]string) (sent bool, warnings string) {
	t.Helper()
	var logs transporttest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	spans, _ := otelFromEnv(func(k string) string { return env[k] }, "test", "mcp-stdio test", log)
	if spans == nil {
		return false, logs.String()
	}
	tp, _ := frame.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	spans.ExportSpan(frame.Span{TraceParent: tp, Name: "tools/call", Kind: frame.SpanServer, Start: time.Unix(1700000000, 0), End: time.Unix(1700000001, 0)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := spans.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return spans.Sent() == 1, logs.String()
}

// tlsCollector starts a collector whose certificate ca signed for
// 127.0.0.1 and collector.test, with server's TLS settings on top.
func tlsCollector(t *testing.T, ca *transporttest.CA, tune func(*tls.Config)) (*httptest.Server, <-chan collected) {
	return newCollector(t, func(s *httptest.Server) {
		s.TLS = ca.ServerConfig(t, "127.0.0.1", "collector.test")
		if tune != nil {
			tune(s.TLS)
		}
		s.StartTLS()
	})
}

// A collector whose certificate a private CA signs is reached with
// OTEL_EXPORTER_OTLP_CERTIFICATE, and without it is said to need it.
func TestOTLPExporterTrustsOTELExporterOTLPCertificate(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv, got := tlsCollector(t, ca, nil)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}

	sent, warnings := exportOne(t, env)
	is.True(!sent) // the test CA is no system root
	is.Equal(strings.Count(warnings, "\n"), 1)
	is.True(strings.Contains(warnings, "name the PEM file of its CA in OTEL_EXPORTER_OTLP_CERTIFICATE"))

	env["OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"] = ca.WriteFile(t)
	sent, warnings = exportOne(t, env)
	is.True(sent)
	is.Equal(warnings, "")
	is.Equal((<-got).url, "/v1/traces")
}

// A collector that asks for a client certificate gets the one
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY name; without
// them, the warning names them.
func TestOTLPExporterPresentsItsClientCertificate(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv, got := tlsCollector(t, ca, func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, ca.ClientPool()
	})
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL,
		"OTEL_EXPORTER_OTLP_CERTIFICATE": ca.WriteFile(t),
	}
	sent, warnings := exportOne(t, env)
	is.True(!sent)
	is.Equal(strings.Count(warnings, "\n"), 1)
	is.True(strings.Contains(warnings, "it wants a client certificate: name its PEM files in OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY"))

	env["OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"], env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = ca.WriteClientCertificate(t, "mcp-stdio-exporter")
	sent, warnings = exportOne(t, env)
	is.True(sent)
	is.Equal(warnings, "")
	is.Equal((<-got).client, "mcp-stdio-exporter")
}

// Spans to a collector that is not on this machine go through the proxy
// the environment names, as OpenTelemetry's SDKs send them: an https
// collector by host name through HTTPS_PROXY's CONNECT (a corporate
// network), a plain-http one through HTTP_PROXY.
func TestOTLPExporterUsesTheProxy(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv, got := tlsCollector(t, ca, nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	connect := transporttest.NewConnectProxy(t, srv.Listener.Addr().String())
	sent, warnings := exportOne(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    "https://collector.test:" + port,
		"OTEL_EXPORTER_OTLP_CERTIFICATE": ca.WriteFile(t),
		"HTTPS_PROXY":                    connect.URL,
	})
	is.True(sent)
	is.Equal(warnings, "")
	is.Equal(connect.Targets(), []string{"collector.test:" + port})
	is.Equal((<-got).url, "/v1/traces")

	plain, got := newCollector(t, (*httptest.Server).Start)
	sent, _ = exportOne(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.invalid:4318",
		"HTTP_PROXY":                  plain.URL,
	})
	is.True(sent)
	is.Equal((<-got).url, "http://collector.invalid:4318/v1/traces") // the proxy's absolute form
}

// TLS settings that cannot be used are said in one warning, naming the
// variable and what to do, and no spans are sent.
func TestOTLPExporterRefusesUnusableTLSSettings(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := transporttest.NewCA(t).WriteClientCertificate(t, "c")
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "missing.pem")}, "OTEL_EXPORTER_OTLP_CERTIFICATE " + filepath.Join(dir, "missing.pem") + ": no such file or directory"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": notPEM}, "no PEM certificate in it"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": certFile}, "set both (PEM files) or neither"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": certFile, "OTEL_EXPORTER_OTLP_CLIENT_KEY": certFile}, "the OTLP client certificate"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": keyFile, "OTEL_EXPORTER_OTLP_CLIENT_KEY": keyFile}, "the OTLP client certificate"},
	} {
		is := is.New(t)
		tt.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
		sent, warnings := exportOne(t, tt.env)
		is.True(!sent)
		is.Equal(strings.Count(warnings, "\n"), 1) // one line
		is.True(strings.Contains(warnings, "no spans are sent: "))
		is.True(strings.Contains(warnings, tt.want))
	}
}
