package mw

import (
	"context"
	"net/http"
	"testing"

	"github.com/matryer/is"
)

// as hands the stage one message of principal p, on a fresh exchange, as
// the transport would behind the OAuth gate (sse: the HTTP+SSE entry); a
// GET's exchange is returned open.
func (h *sessionsHarness) as(t *testing.T, p string, sse bool, method, sid, body string) (*fakeExchange, error) {
	t.Helper()
	var entry Handler = h.s
	if sse {
		entry = h.s.SSE()
	}
	x, err := hand(WithPrincipal(t.Context(), p), entry, method, sid, body)
	if method != http.MethodGet || err != nil {
		x.lines()
		x.finish()
	}
	return x, err
}

// A session belongs to the principal that opened it: another principal
// naming its id gets what an unknown id gets — 404, the same body — on
// POST, GET and DELETE, and the session lives on untouched.
func TestSessionsBoundToPrincipal(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	_, err := h.as(t, "iss alice", false, http.MethodPost, "", initBody) // session-1
	is.NoErr(err)
	b := h.opened[0]
	is.Equal(b.conn.Principal(), "iss alice") // recorded for the session's stages

	for _, tt := range []struct{ method, body string }{
		{http.MethodPost, pingBody},
		{http.MethodPost, initBody},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		for _, who := range []string{"iss bob", "other alice", ""} {
			_, err := h.as(t, who, false, tt.method, "session-1", tt.body)
			status, body := refusal(err)
			_, errUnknown := h.as(t, who, false, tt.method, "session-9", tt.body)
			statusUnknown, bodyUnknown := refusal(errUnknown)
			is.Equal(status, http.StatusNotFound) // tt.method, who
			is.Equal(status, statusUnknown)       // as an unknown id
			is.Equal(body, bodyUnknown)           // not a word more
		}
	}
	is.Equal(len(b.got), 1) // the initialize only
	is.Equal(h.s.Len(), 1)
	is.True(!b.isClosed())

	_, err = h.as(t, "iss alice", false, http.MethodPost, "session-1", pingBody)
	is.NoErr(err)
	stream, err := h.as(t, "iss alice", false, http.MethodGet, "session-1", "")
	is.NoErr(err)
	stream.finish()
	_, err = h.as(t, "iss alice", false, http.MethodDelete, "session-1", "")
	is.NoErr(err)
	is.True(b.isClosed())
}

// An HTTP+SSE session belongs to the principal of its stream.
func TestSessionsSSEBoundToPrincipal(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	h.version = "2024-11-05"
	stream, err := h.as(t, "iss alice", true, http.MethodGet, "sse-1", "")
	is.NoErr(err)
	defer stream.finish()
	b := h.opened[0]
	is.Equal(b.conn.Principal(), "iss alice")

	for _, body := range []string{sessionEraInitBody, pingBody} {
		_, err := h.as(t, "iss bob", true, http.MethodPost, "sse-1", body)
		status, got := refusal(err)
		_, errUnknown := h.as(t, "iss bob", true, http.MethodPost, "sse-9", body)
		statusUnknown, want := refusal(errUnknown)
		is.Equal(status, http.StatusNotFound)
		is.Equal(status, statusUnknown)
		is.Equal(got, want)
	}
	is.Equal(len(b.got), 1) // the stream only
	_, err = h.as(t, "iss alice", true, http.MethodPost, "sse-1", sessionEraInitBody)
	is.NoErr(err)
	is.Equal(b.conn.ProtocolVersion(), "2024-11-05")
}

// Without authentication every request is nobody in particular (""), and
// sessions work as ever.
func TestSessionsWithoutPrincipal(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	_, err := h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	_, err = h.as(t, "", false, http.MethodPost, "session-1", pingBody)
	is.NoErr(err)
	_, err = h.as(t, "iss alice", false, http.MethodPost, "session-1", pingBody)
	status, _ := refusal(err)
	is.Equal(status, http.StatusNotFound)
	is.NoErr(h.s.Close(context.Background()))
}
