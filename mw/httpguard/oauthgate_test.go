package httpguard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// fakeTokens is a TokenVerifier over a table of tokens; "down" cannot be
// decided, and every token asked about is recorded.
type fakeTokens struct {
	mu    sync.Mutex
	asked []string
}

var tokenTable = map[string]struct {
	principal string
	scopes    []string
}{
	"alice-token": {"https://as.example alice", []string{"mcp:tools", "profile"}},
	"bob-token":   {"https://as.example bob", []string{"profile"}},
	"nobody":      {"", []string{"mcp:tools"}},
}

func (f *fakeTokens) VerifyToken(_ context.Context, token string) (string, []string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, token)
	f.mu.Unlock()
	if token == "down" {
		return "", nil, errors.New("the identity provider is unreachable")
	}
	e, ok := tokenTable[token]
	if !ok {
		return "", nil, fmt.Errorf("%w: unknown", httpguard.ErrInvalidToken)
	}
	return e.principal, e.scopes, nil
}

func testResource(t testing.TB) *server.ProtectedResource {
	pr, err := server.NewProtectedResource(server.ResourceConfig{
		PublicURL:            "https://mcp.example.com",
		Path:                 "/mcp",
		AuthorizationServers: []string{"https://as.example"},
		ScopesSupported:      []string{"mcp:tools", "profile"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// seen is what the handler behind the gate saw of a request.
type seen struct {
	principal, authorization string
}

func newGate(t testing.TB, log *slog.Logger) (http.Handler, *fakeTokens, *[]seen) {
	v := &fakeTokens{}
	var got []seen
	h := httpguard.RequireOAuth(httpguard.OAuthOptions{
		Verifier:       v,
		Challenges:     testResource(t),
		RequiredScopes: []string{"mcp:tools"},
		Logger:         log,
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, seen{mw.PrincipalOf(r.Context()), strings.Join(r.Header.Values("Authorization"), "|")})
		w.WriteHeader(http.StatusTeapot)
	}))
	return h, v, &got
}

const (
	metaURL       = `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	challenge     = `Bearer ` + metaURL + `, scope="mcp:tools"`
	challengeBad  = `Bearer error="invalid_token", ` + metaURL + `, scope="mcp:tools"`
	challengeReq  = `Bearer error="invalid_request", ` + metaURL + `, scope="mcp:tools"`
	challengeMore = `Bearer error="insufficient_scope", scope="mcp:tools", ` + metaURL
	bodyNoToken   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: an OAuth access token is required"}}`
	bodyBadToken  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: the access token is not valid here"}}`
)

func TestRequireOAuth(t *testing.T) {
	for _, tt := range []struct {
		name          string
		url           string
		authorization []string
		status        int
		challenge     string // "" for none
		body          string // "" to skip
		asked         bool   // the verifier was asked
	}{
		{"no token", "/mcp", nil, 401, challenge, bodyNoToken, false},
		{"another scheme", "/mcp", []string{"Basic YWxpY2U6c2VjcmV0"}, 401, challenge, bodyNoToken, false},
		{"a scheme that begins like Bearer", "/mcp", []string{"Bearerx alice-token"}, 401, challenge, bodyNoToken, false},
		{"no token after the scheme", "/mcp", []string{"Bearer"}, 401, challengeBad, bodyBadToken, false},
		{"a token that is no b64token", "/mcp", []string{"Bearer alice token"}, 401, challengeBad, bodyBadToken, false},
		{"a quote in the token", "/mcp", []string{`Bearer "alice-token"`}, 401, challengeBad, bodyBadToken, false},
		{"two credentials in one header", "/mcp", []string{"Bearer alice-token, Bearer bob-token"}, 401, challengeBad, bodyBadToken, false},
		{"an unknown token", "/mcp", []string{"Bearer mallory"}, 401, challengeBad, bodyBadToken, true},
		{"a verifier naming nobody", "/mcp", []string{"Bearer nobody"}, 401, challengeBad, bodyBadToken, true},
		{"two Authorization headers", "/mcp", []string{"Bearer alice-token", "Bearer alice-token"}, 400, challengeReq,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: send the access token in one Authorization header, never in the URL"}}`, false},
		{"a token in the query", "/mcp?access_token=alice-token", nil, 400, challengeReq, "", false},
		{"a token in the query beside the header", "/mcp?access_token=alice-token", []string{"Bearer alice-token"}, 400, challengeReq, "", false},
		{"too few scopes", "/mcp", []string{"Bearer bob-token"}, 403, challengeMore,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: the access token lacks the scope mcp:tools"}}`, true},
		{"the verifier cannot decide", "/mcp", []string{"Bearer down"}, 503, "",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: the access token cannot be verified now; try again later"}}`, true},
	} {
		for _, method := range []string{"POST", "GET", "DELETE"} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				is := is.New(t)
				h, v, got := newGate(t, nil)
				r := httptest.NewRequest(method, tt.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				for _, a := range tt.authorization {
					r.Header.Add("Authorization", a)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				is.Equal(w.Code, tt.status)
				is.Equal(len(*got), 0) // nothing behind the gate ran
				is.Equal(w.Header().Get("WWW-Authenticate"), tt.challenge)
				is.Equal(len(w.Header().Values("WWW-Authenticate")), min(1, len(tt.challenge)))
				is.Equal(w.Header().Get("Content-Type"), "application/json")
				is.Equal(w.Header().Get("Connection"), "close") // the body was never read
				if tt.body != "" {
					is.Equal(w.Body.String(), tt.body)
				}
				if tt.status == 503 {
					is.Equal(w.Header().Get("Retry-After"), httpguard.OAuthRetryAfter)
				} else {
					is.Equal(w.Header().Get("Retry-After"), "")
				}
				is.Equal(len(v.asked) > 0, tt.asked)
			})
		}
	}
}

// A token the verifier accepts with the required scopes passes: the
// request goes on with its principal and without its token, whatever the
// case of the scheme.
func TestRequireOAuthPasses(t *testing.T) {
	for _, a := range []string{"Bearer alice-token", "bearer alice-token", "BEARER   alice-token"} {
		for _, method := range []string{"POST", "GET", "DELETE"} {
			is := is.New(t)
			log, logs := gateLogger(t)
			h, v, got := newGate(t, log)
			r := httptest.NewRequest(method, "/mcp", nil)
			r.Header.Set("Authorization", a)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			is.Equal(w.Code, http.StatusTeapot)
			is.Equal(v.asked, []string{"alice-token"})
			is.Equal(*got, []seen{{principal: "https://as.example alice"}}) // no Authorization behind the gate
			is.Equal(r.Header.Get("Authorization"), a)                      // the caller's request untouched
			is.True(strings.Contains(logs.String(), `principal="https://as.example alice"`))
			is.True(!strings.Contains(logs.String(), "alice-token")) // never the token
		}
	}
}

// Refusals never log the token either.
func TestRequireOAuthLogsNoToken(t *testing.T) {
	is := is.New(t)
	log, logs := gateLogger(t)
	h, _, _ := newGate(t, log)
	for _, tok := range []string{"mallory-secret", "down", "bob-token", "nobody", "bad token!"} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	is.True(logs.String() != "")
	for _, tok := range []string{"mallory-secret", "bob-token", "bad token!"} {
		is.True(!strings.Contains(logs.String(), tok)) // tok
	}
}

func gateLogger(t testing.TB) (*slog.Logger, *transporttest.SyncBuffer) {
	b := &transporttest.SyncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// FuzzRequireOAuthAuthorization holds the gate's promises for any
// Authorization header: one of its statuses, one of its fixed challenges
// (nothing of the header in them), and the verifier asked only about a
// b64token that ends the header.
func FuzzRequireOAuthAuthorization(f *testing.F) {
	for _, s := range []string{"", "Bearer alice-token", "bearer  bob-token", "Bearer", "Bearer ", "Basic x", "Bearer a b",
		"Bearer abc==", "Bearer ==", "Bearer\talice-token", "Bearer alice-token\x00", `Bearer "x"`, "Bearer down", "Bearer nobody", "DPoP alice-token"} {
		f.Add(s)
	}
	h, v, got := newGate(f, nil)
	allowed := map[string]bool{"": true, challenge: true, challengeBad: true, challengeReq: true, challengeMore: true}
	f.Fuzz(func(t *testing.T, a string) {
		v.asked, *got = nil, nil
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header["Authorization"] = []string{a}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusTeapot, 401, 403, 503:
		default:
			t.Fatalf("status %d for %q", w.Code, a)
		}
		if c := w.Header().Get("WWW-Authenticate"); !allowed[c] {
			t.Fatalf("challenge %q for %q", c, a)
		}
		for _, tok := range v.asked {
			if !strings.HasSuffix(a, tok) || strings.ContainsAny(tok, " \t\",\x00") || !strings.EqualFold(a[:6], "bearer") {
				t.Fatalf("asked about %q for %q", tok, a)
			}
		}
		if w.Code == http.StatusTeapot && ((*got)[0].authorization != "" || (*got)[0].principal == "") {
			t.Fatalf("passed %+v for %q", (*got)[0], a)
		}
	})
}

// A token spray while the verifier cannot decide (an identity provider
// down or over its rate): every request gets its 503 with Retry-After,
// and stderr gets one line, not one per request.
func TestRequireOAuthOutageIsOneLogLine(t *testing.T) {
	is := is.New(t)
	log, logs := gateLogger(t)
	h, _, _ := newGate(t, log)
	for range 100 {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer down")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		is.Equal(w.Code, http.StatusServiceUnavailable)
		is.Equal(w.Header().Get("Retry-After"), httpguard.OAuthRetryAfter)
	}
	is.Equal(strings.Count(logs.String(), "level=WARN"), 1)
}
