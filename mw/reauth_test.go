package mw

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The OAuth client satisfies the stage's interface.
var _ Authorizer = (*auth.Client)(nil)

// scriptedAuthorizer answers Unauthorized and Forbidden from scripts and
// records its calls.
type scriptedAuthorizer struct {
	mu           sync.Mutex
	gen          uint64
	unauthorized []authAnswer
	forbidden    []authAnswer
	calls        []string
}

type authAnswer struct {
	retry bool
	err   error
}

func (a *scriptedAuthorizer) Generation() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

func (a *scriptedAuthorizer) next(script *[]authAnswer, name string, gen uint64, h http.Header) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, name+" "+h.Get("WWW-Authenticate"))
	if len(*script) == 0 {
		return false, errors.New("unscripted")
	}
	ans := (*script)[0]
	*script = (*script)[1:]
	if ans.retry {
		a.gen++
	}
	return ans.retry, ans.err
}

func (a *scriptedAuthorizer) Unauthorized(_ context.Context, gen uint64, h http.Header) (bool, error) {
	return a.next(&a.unauthorized, "401", gen, h)
}

func (a *scriptedAuthorizer) Forbidden(_ context.Context, gen uint64, h http.Header) (bool, error) {
	return a.next(&a.forbidden, "403", gen, h)
}

// reauthStarted is a Reauthorizing error.
type reauthStarted struct{}

func (reauthStarted) Error() string {
	return "authorization required: sign-in started in the browser; retry"
}
func (reauthStarted) Reauthorizing() bool { return true }

// scriptedServer fails deliveries with the given statuses, then succeeds.
type scriptedServer struct {
	mu       sync.Mutex
	statuses []int
	sent     int
}

func (s *scriptedServer) Handle(context.Context, frame.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if len(s.statuses) == 0 {
		return nil
	}
	code := s.statuses[0]
	s.statuses = s.statuses[1:]
	h := http.Header{}
	switch code {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer resource_metadata="https://h/prm"`)
	case http.StatusForbidden:
		h.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="write"`)
	}
	return &frame.StatusError{Code: code, Header: h}
}

// clientSide collects what reaches the client.
type clientSide struct {
	mu   sync.Mutex
	msgs []frame.Message
}

func (c *clientSide) Handle(_ context.Context, m frame.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
	return nil
}

func reauthStage(a Authorizer, s Handler, o ReauthOptions) (Handler, *clientSide) {
	o.Authorizer = a
	cs := &clientSide{}
	d := Reauth(o)(Duplex{ToServer: s, ToClient: cs})
	return d.ToServer, cs
}

var toolsCall = frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)

func TestReauth(t *testing.T) {
	tests := []struct {
		name         string
		msg          frame.Message
		statuses     []int
		unauthorized []authAnswer
		forbidden    []authAnswer
		maxStepUps   int
		wantErr      string // "" = nil
		wantSent     int
		wantClient   string // the message the client got, if any
	}{
		{
			name: "401 on tools/call: refresh and one retry", msg: toolsCall,
			statuses: []int{401}, unauthorized: []authAnswer{{retry: true}}, wantSent: 2,
		},
		{
			name: "401 on a notification", msg: frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
			statuses: []int{401}, unauthorized: []authAnswer{{retry: true}}, wantSent: 2,
		},
		{
			name: "401 again after the retry: told, not retried", msg: toolsCall,
			statuses: []int{401, 401}, unauthorized: []authAnswer{{retry: true}, {retry: true}},
			wantSent: 2, wantErr: "authentication failed: the server rejected the new token too",
		},
		{
			name: "401 again and the authorizer starts a sign-in", msg: toolsCall,
			statuses: []int{401, 401}, unauthorized: []authAnswer{{retry: true}, {err: reauthStarted{}}},
			wantSent: 2, wantClient: `{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"authorization required: sign-in started in the browser; retry"}}`,
		},
		{
			name: "dead grant: -32002 at once", msg: toolsCall,
			statuses: []int{401}, unauthorized: []authAnswer{{err: reauthStarted{}}},
			wantSent: 1, wantClient: `{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"authorization required: sign-in started in the browser; retry"}}`,
		},
		{
			name: "dead grant on a notification: nobody to answer", msg: frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
			statuses: []int{401}, unauthorized: []authAnswer{{err: reauthStarted{}}},
			wantSent: 1, wantErr: "authorization required: sign-in started in the browser; retry",
		},
		{
			name: "401 that nothing helps", msg: toolsCall,
			statuses: []int{401}, unauthorized: []authAnswer{{err: errors.New("refreshing the token: HTTP 503")}},
			wantSent: 1, wantErr: "authentication failed: refreshing the token: HTTP 503",
		},
		{
			name: "403 step-up and retry", msg: toolsCall,
			statuses: []int{403}, forbidden: []authAnswer{{retry: true}}, wantSent: 2,
		},
		{
			name: "403 not about scope stands", msg: toolsCall,
			statuses: []int{403}, forbidden: []authAnswer{{}}, wantSent: 1, wantErr: "HTTP 403",
		},
		{
			name: "403 after the step-up: limit", msg: toolsCall,
			statuses: []int{403, 403}, forbidden: []authAnswer{{retry: true}},
			wantSent: 2, wantErr: "authorization failed: the server still refuses after a step-up",
		},
		{
			name: "two step-ups allowed", msg: toolsCall, maxStepUps: 2,
			statuses: []int{403, 403}, forbidden: []authAnswer{{retry: true}, {retry: true}}, wantSent: 3,
		},
		{
			name: "step-up refused", msg: toolsCall,
			statuses: []int{403}, forbidden: []authAnswer{{err: errors.New(`step-up to scope "write" already tried 2 times`)}},
			wantSent: 1, wantErr: `authorization failed: step-up to scope "write" already tried 2 times`,
		},
		{
			name: "401 then 403: both recoveries", msg: toolsCall,
			statuses: []int{401, 403}, unauthorized: []authAnswer{{retry: true}}, forbidden: []authAnswer{{retry: true}}, wantSent: 3,
		},
		{
			name: "other statuses are not ours", msg: toolsCall,
			statuses: []int{500}, wantSent: 1, wantErr: "HTTP 500",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			a := &scriptedAuthorizer{unauthorized: tt.unauthorized, forbidden: tt.forbidden}
			srv := &scriptedServer{statuses: tt.statuses}
			h, cs := reauthStage(a, srv, ReauthOptions{MaxStepUps: tt.maxStepUps})
			err := h.Handle(context.Background(), tt.msg)
			if tt.wantErr == "" {
				is.NoErr(err)
			} else {
				is.True(err != nil)
				is.Equal(err.Error(), tt.wantErr)
			}
			is.Equal(srv.sent, tt.wantSent) // deliveries
			if tt.wantClient == "" {
				is.Equal(len(cs.msgs), 0)
			} else {
				is.Equal(len(cs.msgs), 1)
				is.Equal(cs.msgs[0].String(), tt.wantClient)
			}
			for _, c := range a.calls {
				is.True(strings.Contains(c, "Bearer")) // the challenge reached the authorizer
			}
		})
	}
}

func TestReauthEdgeAnswers(t *testing.T) {
	is := is.New(t)
	// The edge answers a failed request with ErrorFor: the auth failure is
	// the message, not "HTTP 401".
	a := &scriptedAuthorizer{unauthorized: []authAnswer{{err: errors.New("re-authorization is off")}}}
	h, _ := reauthStage(a, &scriptedServer{statuses: []int{401}}, ReauthOptions{})
	err := h.Handle(context.Background(), toolsCall)
	var ae *AuthError
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status.Code, 401)
	is.Equal(ErrorFor(toolsCall, err).String(), `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"authentication failed: re-authorization is off"}}`)

	a = &scriptedAuthorizer{forbidden: []authAnswer{{retry: true}}}
	h, _ = reauthStage(a, &scriptedServer{statuses: []int{403, 403}}, ReauthOptions{})
	err = h.Handle(context.Background(), toolsCall)
	is.Equal(ErrorFor(toolsCall, err).String(), `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"authorization failed: the server still refuses after a step-up"}}`)
}

func TestReauthDoesNotRetryACancelledRequest(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	a := &scriptedAuthorizer{unauthorized: []authAnswer{{retry: true}}}
	srv := &scriptedServer{statuses: []int{401}}
	h, _ := reauthStage(a, HandlerFunc(func(c context.Context, m frame.Message) error {
		cancel() // the client gave up while the request was out
		return srv.Handle(c, m)
	}), ReauthOptions{})
	err := h.Handle(ctx, toolsCall)
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(srv.sent, 1)
}

func TestReauthWithoutAuthorizerIsAPassThrough(t *testing.T) {
	is := is.New(t)
	srv := &scriptedServer{statuses: []int{401}}
	d := Reauth(ReauthOptions{})(Duplex{ToServer: srv, ToClient: &clientSide{}})
	var st *frame.StatusError
	is.True(errors.As(d.ToServer.Handle(context.Background(), toolsCall), &st))
}

// httpNext is a minimal transport for the end-to-end tests: it POSTs the
// message through an auth.Transport and reports an HTTP error status as a
// *frame.StatusError, like the real transport does.
func httpNext(hc *http.Client, url string, toClient Handler) Handler {
	return HandlerFunc(func(ctx context.Context, m frame.Message) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(m.Bytes()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return &frame.SendError{Sent: true, Err: err}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 {
			return &frame.StatusError{Code: resp.StatusCode, Header: resp.Header, Body: body}
		}
		if resp.StatusCode == http.StatusAccepted {
			return nil
		}
		answer, err := frame.Parse(body)
		if err != nil {
			return err
		}
		return toClient.Handle(ctx, answer)
	})
}

// TestReauthWithTheOAuthClient runs the stage in front of a real HTTP
// exchange with the auth package's Client and a loopback authorization
// server: a 401 in the middle of a session refreshes once and retries the
// tools/call once; a dead grant answers -32002 at once and signs in in the
// background, after which the client's retry goes through.
func TestReauthWithTheOAuthClient(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour})
	var browser sync.WaitGroup
	c, err := auth.New(auth.Options{
		ServerURL: srv.MCPURL(),
		StorePath: filepath.Join(t.TempDir(), "tokens.json"),
		Stderr:    io.Discard,
		OpenURL: func(_ context.Context, u string) error {
			browser.Add(1)
			go func() { defer browser.Done(); authtest.Visit(u) }()
			return nil
		},
	})
	is.NoErr(err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	defer func() { cancel(); is.NoErr(<-runDone) }()

	hc := &http.Client{Transport: &auth.Transport{Source: c}}
	defer hc.CloseIdleConnections()
	cs := &clientSide{}
	d := Reauth(ReauthOptions{Authorizer: c})(Duplex{ToServer: httpNext(hc, srv.MCPURL(), cs), ToClient: cs})

	// No token yet: the first 401 signs in (foreground) and the call goes through.
	is.NoErr(d.ToServer.Handle(ctx, toolsCall))
	browser.Wait()
	is.Equal(len(cs.msgs), 1)
	is.Equal(cs.msgs[0].String(), `{"jsonrpc":"2.0","id":7,"result":{}}`)

	// Mid-session the server forgets the token: one refresh, one retry.
	srv.RevokeAccessTokens()
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x"}}`)))
	is.Equal(srv.Count("/token", "refresh_token"), 1)
	is.Equal(cs.msgs[1].String(), `{"jsonrpc":"2.0","id":8,"result":{}}`)

	// The grant dies: -32002 at once, sign-in in the background.
	srv.RevokeAccessTokens()
	srv.RevokeRefreshTokens()
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)))
	code, _ := cs.msgs[2].ErrorCode()
	is.Equal(code, frame.CodeReauthorizing)
	is.NoErr(c.WaitSignIn(ctx))
	browser.Wait()
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`)))
	is.Equal(cs.msgs[3].String(), `{"jsonrpc":"2.0","id":10,"result":{}}`)
	is.Equal(srv.Count("/authorize", ""), 2)
}
