package mw_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// startFailure stands for the transport's HTTP+SSE start failure: the
// contract mw.StreamStartFailure names.
type startFailure struct {
	get, post *frame.StatusError
	err       error
}

func (e *startFailure) Error() string { return "the HTTP+SSE stream never offered an endpoint" }
func (e *startFailure) StreamStartFailure() (get, post *frame.StatusError, err error) {
	return e.get, e.post, e.err
}

// redirectRefusal stands for the transport's redirect not followed: the
// contract mw.RedirectRefusal names.
type redirectRefusal struct{ from, to string }

func (e *redirectRefusal) Error() string {
	return fmt.Sprintf("the server redirected (HTTP 307) to %s, another origin than %s: not followed", e.to, e.from)
}
func (e *redirectRefusal) RedirectRefusal() (from, to string) { return e.from, e.to }

func status(code int, body string) *frame.StatusError {
	return &frame.StatusError{Code: code, Header: http.Header{}, Body: []byte(body)}
}

// Diagnose tells, from the failure alone, which request was refused, the
// likely cause and the server's own words; the transport's failures are
// recognised through the two small interfaces, without the transport.
func TestDiagnoseExplainsFailures(t *testing.T) {
	o := mw.DiagnoseOptions{URL: "https://user:pw@example.com/mcp", Transport: "auto"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"POST refused", &frame.SendError{Err: status(404, "Not Found\n")}, `HTTP 404 from https://example.com/mcp: no MCP endpoint at this path; the server said: "Not Found"`},
		{"GET refused", &frame.SendError{Err: &startFailure{get: status(405, "")}}, "HTTP 405 from https://example.com/mcp to the HTTP+SSE GET: not an HTTP+SSE stream (a Streamable HTTP endpoint answers a GET without a session this way)"},
		{"both refused", &startFailure{get: status(404, ""), post: status(405, "")}, "HTTP 404 from https://example.com/mcp to both the Streamable HTTP POST and the HTTP+SSE GET: no MCP endpoint at this path"},
		{"last GET refused", &startFailure{err: status(502, "<title>Bad Gateway</title>")}, `HTTP 502 from https://example.com/mcp to the HTTP+SSE GET: the server (or a proxy in front of it) failed; the server said: "Bad Gateway"`},
		{"no endpoint", &startFailure{err: errors.New("no endpoint event in 10s")}, "the HTTP+SSE stream never offered an endpoint at https://example.com/mcp: no HTTP+SSE stream there (is this the SSE URL?)"},
		{"stream refused the connection", &startFailure{err: syscall.ECONNREFUSED}, "the HTTP+SSE stream never offered an endpoint at https://example.com/mcp: nothing listens there"},
		{"connection refused", &frame.SendError{Err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)}, "cannot reach https://example.com/mcp: connection refused: nothing listens there"},
		{"redirect", &redirectRefusal{from: "https://example.com/mcp", to: "https://other.example/mcp"}, "the server redirected (HTTP 307) to https://other.example/mcp, another origin than https://example.com/mcp: not followed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			u := mw.Diagnose(tc.err, o)
			is.True(u != nil)
			is.Equal(u.Error(), tc.want)
			is.True(errors.Is(u, tc.err)) // it unwraps to the failure
		})
	}
}

// A refusal of credentials tells whether some were sent, quotes the
// challenge without them, and looks for OAuth metadata once for all the
// diagnoses that share a lookup, within OAuthMetadataWait; a relay that
// signs in itself looks for none.
func TestDiagnoseRefusedCredentials(t *testing.T) {
	is := is.New(t)
	looks := 0
	refusal := status(401, `{"error":"invalid_token","error_description":"Bearer abcdefghijklmnopqrstuvwxyz is expired"}`)
	refusal.Header.Set("WWW-Authenticate", `Bearer realm="mcp", error="invalid_token"`)
	o := mw.DiagnoseOptions{
		URL: "https://example.com/mcp",
		FindOAuthMetadata: func(ctx context.Context, challenge http.Header) (string, error) {
			looks++
			deadline, ok := ctx.Deadline()
			is.True(ok && time.Until(deadline) <= mw.OAuthMetadataWait)
			is.Equal(challenge.Get("WWW-Authenticate"), `Bearer realm="mcp", error="invalid_token"`)
			return "https://example.com/.well-known/oauth-protected-resource", nil
		},
		Lookup: &mw.OAuthMetadataLookup{},
		Advice: func(u *mw.Unreachable) string {
			if u.OAuthMetadata != "" {
				return "sign in (the server publishes " + u.OAuthMetadata + ")"
			}
			return ""
		},
	}
	for range 2 {
		u := mw.Diagnose(&frame.SendError{Err: refusal}, o)
		is.Equal(u.Error(), `HTTP 401 from https://example.com/mcp: the server wants credentials (WWW-Authenticate: Bearer realm="mcp", error="invalid_token"); the server said: "Bearer … is expired"; sign in (the server publishes https://example.com/.well-known/oauth-protected-resource)`)
		is.True(!u.Credentials)
	}
	is.Equal(looks, 1)

	o.SignsIn = true
	u := mw.Diagnose(refusal, o)
	is.True(u.Credentials)
	is.Equal(u.Cause, "the server refused the credentials sent")
	is.Equal(u.OAuthMetadata, "")
	is.Equal(looks, 1)

	o = mw.DiagnoseOptions{URL: "https://example.com/mcp", Header: http.Header{"Authorization": {"Bearer static-secret-1"}}}
	refusal = status(403, "static-secret-1 may not")
	u = mw.Diagnose(refusal, o)
	is.True(u.Credentials)
	is.Equal(u.Said, "… may not")
}

// Failures that say nothing about the server are not diagnosed, and a
// diagnosis already made is kept as it is.
func TestDiagnoseLeavesOthersAlone(t *testing.T) {
	is := is.New(t)
	is.True(mw.Diagnose(nil, mw.DiagnoseOptions{}) == nil)
	is.True(mw.Diagnose(fmt.Errorf("x: %w", frame.ErrCancelled), mw.DiagnoseOptions{}) == nil)
	is.True(mw.Diagnose(frame.ErrClosed, mw.DiagnoseOptions{}) == nil)
	u := &mw.Unreachable{URL: "https://example.com/mcp", Status: 500}
	is.True(mw.Diagnose(fmt.Errorf("again: %w", u), mw.DiagnoseOptions{URL: "https://other.example"}) == u)
}

// ServerUnusable tells the failures that show the server cannot be used,
// and which of them every request gets.
func TestServerUnusable(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		err                    error
		unusable, everyRequest bool
	}{
		{"stream never opened", &frame.SendError{Err: &startFailure{get: status(404, "")}}, true, true},
		{"status", &frame.SendError{Sent: true, Err: status(500, "")}, true, false},
		{"network", &frame.SendError{Err: syscall.ECONNREFUSED}, true, false},
		{"other send failure", &frame.SendError{Err: errors.New("message too large")}, false, false},
		{"cancelled", frame.ErrCancelled, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			unusable, every := mw.ServerUnusable(tc.err)
			is.Equal(unusable, tc.unusable)
			is.Equal(every, tc.everyRequest)
		})
	}
}
