package main_test

import (
	"bufio"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// The attack of issue 22: an https server redirects the relay to a plain
// http one. The built relay answers each of the host's requests with one
// error naming the target, says what to do on stderr, and the plain
// server receives nothing — with --follow-redirects too. A redirect to
// another plain http origin is refused the same way, naming the flag.
func TestRelayRefusesRedirectsAway(t *testing.T) {
	relayBinary(t)
	var reached atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer plain.Close()
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", plain.URL+"/mcp")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	secure := httptest.NewTLSServer(redirect)
	defer secure.Close()
	other := httptest.NewServer(redirect)
	defer other.Close()
	// The relay trusts the test server's certificate through SSL_CERT_FILE.
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile)

	for _, c := range []struct {
		name string
		args []string
		want string // in every error and on stderr
	}{
		{"https to http", []string{secure.URL + "/mcp"}, "plain http after https"},
		{"https to http, flag given", []string{"--follow-redirects", secure.URL + "/mcp"}, "no flag follows"},
		{"another origin", []string{other.URL + "/mcp"}, "--follow-redirects"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			args := append([]string{"--bearer-token", "e2e-secret-token", "-H", "X-Api-Key: e2e-key"}, c.args...)
			relay, stdin, stdout, stderr := startRelayProcess(t, ctx, args...)
			_, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`+"\n"+
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"secret":"argument"}}}`+"\n")
			is.NoErr(err)
			is.NoErr(stdin.Close())
			var lines []string
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			is.NoErr(relay.Wait())
			is.Equal(len(lines), 2) // one answer per request
			ids := map[string]bool{}
			for _, line := range lines {
				ids[gjson.Get(line, "id").Raw] = true
				msg := gjson.Get(line, "error.message").String()
				is.True(strings.Contains(msg, plain.URL+"/mcp")) // names the target
				is.True(strings.Contains(msg, c.want))
			}
			is.Equal(ids, map[string]bool{"1": true, "2": true})
			is.True(strings.Contains(stderr.String(), c.want))
			is.True(!strings.Contains(stderr.String(), "e2e-secret-token"))
			is.Equal(reached.Load(), int32(0))
		})
	}
}
