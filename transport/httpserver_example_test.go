package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// echoBackend is a backend in memory: it answers every request with its
// params. A real one is a child process (transport.StartChild).
type echoBackend struct {
	toClient transport.Sink
	done     chan struct{}
}

func (b *echoBackend) Handle(ctx context.Context, m frame.Message) error {
	if m.IsRequest() {
		params := m.Get("params").Raw
		if params == "" {
			params = "{}"
		}
		return b.toClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(params)))
	}
	return nil
}

func (b *echoBackend) Done() <-chan struct{} { return b.done }

func (b *echoBackend) Close(context.Context) error { return nil }

// ExampleHTTPServer serves the session era of Streamable HTTP over a
// backend per session, behind the origin and host guards.
func ExampleHTTPServer() {
	srv := transport.NewHTTPServer(transport.HTTPServerConfig{
		Open: func(_ context.Context, _ string, toClient transport.Sink) (transport.Backend, error) {
			return &echoBackend{toClient: toClient, done: make(chan struct{})}, nil
		},
	})
	h := transport.CheckOrigin(transport.OriginPolicy{}, transport.CheckHost(transport.HostPolicy{}, srv))
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer srv.Close(context.Background())
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	show := func(resp *http.Response) {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(b))
	}

	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	show(resp)
	show(post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`))
	show(post("", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	show(post("unknown", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}
	// 200 {"jsonrpc":"2.0","id":2,"result":{"name":"x"}}
	// 400 {"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Bad Request: missing Mcp-Session-Id (initialize first)"}}
	// 404 {"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"session not found"}}
}

// ExampleOriginPolicy shows which browser origins may call a local server.
func ExampleOriginPolicy() {
	p := transport.OriginPolicy{Allow: []string{"chrome-extension://abcdef"}}
	for _, origin := range []string{"", "http://localhost:5173", "http://[::1]:8080", "chrome-extension://abcdef", "https://evil.example", "null"} {
		fmt.Printf("%q %v\n", origin, p.Allowed(origin))
	}
	// Output:
	// "" true
	// "http://localhost:5173" true
	// "http://[::1]:8080" true
	// "chrome-extension://abcdef" true
	// "https://evil.example" false
	// "null" false
}

// ExampleCORS lets a page on an allowed origin call the endpoint: its
// preflight is answered before any authentication, and its requests'
// responses name its origin. A page on another origin is refused by
// CheckOrigin first.
func ExampleCORS() {
	endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" { // stands for the real gate
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	h := transport.CheckOrigin(transport.OriginPolicy{}, transport.CORS(endpoint))

	for _, r := range []struct{ method, origin, auth string }{
		{http.MethodOptions, "http://localhost:6274", ""}, // the preflight carries no token
		{http.MethodPost, "http://localhost:6274", "Bearer t"},
		{http.MethodOptions, "https://evil.example", ""},
	} {
		req := httptest.NewRequest(r.method, "/mcp", nil)
		req.Header.Set("Origin", r.origin)
		if r.method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		if r.auth != "" {
			req.Header.Set("Authorization", r.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		line := fmt.Sprint(r.method, " ", r.origin, " ", w.Code, " ", w.Header().Get("Access-Control-Allow-Origin"), " ", w.Header().Get("Access-Control-Allow-Headers"))
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// OPTIONS http://localhost:6274 204 http://localhost:6274 authorization, content-type
	// POST http://localhost:6274 202 http://localhost:6274
	// OPTIONS https://evil.example 403
}
