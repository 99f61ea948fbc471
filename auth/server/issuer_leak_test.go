package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// TestIssuerVerifierStartsNoGoroutine: the verifier works on its callers'
// goroutines only (key set refreshes and introspection included), so
// nothing of it outlives the calls once its HTTP connections are closed.
func TestIssuerVerifierStartsNoGoroutine(t *testing.T) {
	c := newClock()
	k := newKey(t, "k1", jose.ES256)
	idp := newIdP(t, "", k)
	idp.addOpaque("opq-leak-1", map[string]any{"active": true, "iss": idp.issuer, "aud": testResource, "sub": "bob", "exp": c.Now().Unix() + 60})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	v := newVerifier(t, idp, c, func(cfg *server.IssuerConfig) { cfg.HTTPClient = &http.Client{Transport: tr} })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := "opq-leak-1"
			if i%2 == 0 {
				tok = newKey(t, "rotated", jose.ES256).sign(t, idp.claims(c), "at+jwt")
			}
			_, _ = v.Verify(context.Background(), tok)
		}()
	}
	wg.Wait()
	if _, err := v.Verify(context.Background(), k.sign(t, idp.claims(c), "at+jwt")); err != nil {
		t.Fatal(err)
	}
}
