package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func randomToken(t *testing.T) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Issue 22 point 10: a spray of 300 random opaque tokens at once against
// a stub IdP costs it DefaultIntrospectionRate requests; the rest cannot
// be decided (the gate's 503 with Retry-After), not refused. Repeating
// the spray costs nothing more: the refused ones are remembered (negative
// cache), the others still wait for the rate. A token verified before the
// spray keeps working from the cache. Concurrent checks of one new token
// make one request. An IdP answering "active":"true" (a string) gets the
// token refused (401), with one log line naming its fault.
func TestIssuerIntrospectionSpray(t *testing.T) {
	is := is.New(t)
	c := newClock()
	idp := newIdP(t, "", newKey(t, "k1", jose.ES256)) // closed at cleanup
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	var logs syncBuffer
	v := newVerifier(t, idp, c, func(cfg *server.IssuerConfig) {
		cfg.HTTPClient = &http.Client{Transport: tr}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := context.Background()
	good := map[string]any{"active": true, "iss": idp.issuer, "aud": testResource, "sub": "alice", "exp": c.Now().Unix() + 3600}
	idp.addOpaque("opq-good-1", good)
	_, err := v.Verify(ctx, "opq-good-1")
	is.NoErr(err)
	is.Equal(idp.introHits.Load(), int32(1))

	// The spray: 300 made-up tokens at once, the clock still.
	spray := make([]string, 300)
	for i := range spray {
		spray[i] = randomToken(t)
	}
	check := func() (refusedN, undecidedN int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, tok := range spray {
			wg.Go(func() {
				_, err := v.Verify(ctx, tok)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, server.ErrInvalidToken):
					refusedN++
				case errors.Is(err, server.ErrIntrospectionRateLimited):
					undecidedN++
				default:
					t.Errorf("want a refusal or the rate limit, got %v", err)
				}
			})
		}
		wg.Wait()
		return refusedN, undecidedN
	}
	refusedN, undecidedN := check() // the good token took one of the bucket's
	is.Equal(refusedN, server.DefaultIntrospectionRate-1)
	is.Equal(undecidedN, 300-(server.DefaultIntrospectionRate-1))
	is.Equal(idp.introHits.Load(), int32(server.DefaultIntrospectionRate))
	_, err = v.Verify(ctx, "opq-good-1") // still served, from the cache
	is.NoErr(err)

	refusedN, undecidedN = check() // again: no request more
	is.Equal(refusedN, server.DefaultIntrospectionRate-1)
	is.Equal(undecidedN, 300-(server.DefaultIntrospectionRate-1))
	is.Equal(idp.introHits.Load(), int32(server.DefaultIntrospectionRate))
	is.Equal(strings.Count(logs.String(), "beyond the rate limit"), 1) // one line a minute

	// A second on, the bucket has refilled: a new good token goes through.
	c.Advance(time.Second)
	idp.addOpaque("opq-good-2", good)
	_, err = v.Verify(ctx, "opq-good-2")
	is.NoErr(err)

	// One new token checked 100 times at once: one request.
	idp.addOpaque("opq-good-3", good)
	hits := idp.introHits.Load()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	idp.mu.Lock()
	idp.introHook = func(string) {
		once.Do(func() { close(entered) })
		<-release
	}
	idp.mu.Unlock()
	var started, done sync.WaitGroup
	for range 100 {
		started.Add(1)
		done.Go(func() {
			started.Done()
			_, err := v.Verify(ctx, "opq-good-3")
			if err != nil {
				t.Error(err)
			}
		})
	}
	<-entered
	started.Wait()
	close(release)
	done.Wait()
	is.Equal(idp.introHits.Load(), hits+1)
	idp.mu.Lock()
	idp.introHook = nil
	idp.mu.Unlock()

	// "active" that is not a JSON boolean: refused, the IdP's fault said
	// once.
	for _, tok := range []string{"opq-string-active", "opq-number-active", "opq-null-active", "opq-no-active"} {
		ans := map[string]any{"iss": idp.issuer, "aud": testResource, "sub": "alice", "exp": c.Now().Unix() + 3600}
		switch tok {
		case "opq-string-active":
			ans["active"] = "true"
		case "opq-number-active":
			ans["active"] = 1
		case "opq-null-active":
			ans["active"] = nil
		}
		idp.addOpaque(tok, ans)
	}
	_, err = v.Verify(ctx, "opq-string-active")
	refused(t, err, "opq-string-active")
	is.True(strings.Contains(err.Error(), `"active" as a string`))
	hits = idp.introHits.Load()
	_, err = v.Verify(ctx, "opq-string-active")
	refused(t, err, "opq-string-active")
	is.Equal(idp.introHits.Load(), hits) // remembered
	for _, tok := range []string{"opq-number-active", "opq-null-active", "opq-no-active"} {
		_, err = v.Verify(ctx, tok)
		refused(t, err, tok)
	}
	is.Equal(strings.Count(logs.String(), "not a JSON boolean"), 1)
	is.True(strings.Contains(logs.String(), "RFC 7662"))
	is.True(strings.Contains(logs.String(), idp.issuer))
	is.True(!strings.Contains(logs.String(), "opq-")) // no token in the logs

	// Still serving.
	_, err = v.Verify(ctx, "opq-good-1")
	is.NoErr(err)
}
