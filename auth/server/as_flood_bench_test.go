package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkVerifyDuringRegistrationFlood measures what a registration
// flood does to authenticated traffic: the latency of requests bearing a
// valid access token (through Verify, as serve's gate calls it) while
// four flooders register clients as fast as they can over loopback, from
// many sources, against a store file holding a full client table whose
// clients may make room. It reports the authenticated requests' p50 and
// p99, and the registrations taken and refused per second.
func BenchmarkVerifyDuringRegistrationFlood(b *testing.B) {
	b.Run("quiet", func(b *testing.B) { benchVerify(b, 0, "/register") })
	b.Run("flood", func(b *testing.B) { benchVerify(b, 4, "/register") })
	// The floor: as many requests to a path that answers 404 at once.
	b.Run("flood-404", func(b *testing.B) { benchVerify(b, 4, "/nothing") })
}

func benchVerify(b *testing.B, flooders int, target string) {
	path := filepath.Join(b.TempDir(), "oauth.json")
	ta := &testAS{clock: newFakeClock()}
	var past atomic.Int64 // the table is filled in the past: its clients may make room
	past.Store(int64(2 * clientGrace))
	cfg := AuthorizationServerConfig{
		Issuer:     testIssuer,
		Resource:   testResource,
		SignInCode: func(c string) { ta.mu.Lock(); ta.codes = append(ta.codes, c); ta.mu.Unlock() },
		StorePath:  path,
		Now:        func() time.Time { return time.Now().Add(-time.Duration(past.Load())) },
	}
	loopbackProxies(&cfg)
	a, err := NewAuthorizationServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ta.AuthorizationServer = a
	_, access, _ := ta.signIn(b)
	for i := range DefaultMaxClients - 1 {
		req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`))
		req.RemoteAddr = fmt.Sprintf("10.9.%d.%d:1", i/250, i%250)
		w := httptest.NewRecorder()
		a.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("register: %d %s", w.Code, w.Body)
		}
	}
	past.Store(0)

	mux := http.NewServeMux()
	mux.Handle("/register", a.Handler())
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.Verify(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var registered, refused atomic.Int64
	body := `{"redirect_uris":["http://127.0.0.1:1/cb"],"client_name":"` + strings.Repeat("x", 200) + `"}`
	for f := range flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodPost, srv.URL+target, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", f, i/256%256, i%256))
				resp, err := srv.Client().Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					registered.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		start := time.Now()
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusNoContent {
			b.Fatalf("authenticated request: %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(registered.Load())/b.Elapsed().Seconds(), "registrations/s")
	b.ReportMetric(float64(refused.Load())/b.Elapsed().Seconds(), "refusals/s")
}
