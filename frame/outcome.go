package frame

import (
	"errors"
	"fmt"
	"net/http"
)

// Typed delivery outcomes. Transports return these (wrapped or not) from
// Handle so that the policy stages — retry, session recovery, re-auth —
// decide with knowledge of the method, and so that whoever finally gives up
// can answer the client precisely. They live in frame because both sides of
// the chain speak them and frame is the package both import.

// StatusError reports that a peer answered a message with an HTTP status that
// does not carry its JSON-RPC answer in the normal way (any status >= 400, or
// an unexpected one).
type StatusError struct {
	Code   int
	Header http.Header
	// Body is the start of the response body (at most a few KiB), for
	// diagnostics and for a JSON-RPC error a server put there. Never log it
	// for statuses that may echo credentials.
	Body []byte
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d", e.Code) }

// Response returns the JSON-RPC error response the body carries, if it is
// one, answering id (a body with a null or no id is taken as answering id).
func (e *StatusError) Response(id ID) (Message, bool) {
	m, err := Parse(e.Body)
	if err != nil || m.Kind() != Error {
		return Message{}, false
	}
	switch m.ID() {
	case id:
		return m, true
	case "null", "":
		if id == "" {
			return m, true
		}
		r, err := m.WithID(id)
		return r, err == nil
	}
	return Message{}, false
}

// SendError reports that a message could not be moved to its peer or that
// its answer was lost on the way back. Sent tells whether the request may
// have reached the peer: when false, sending it again cannot run it twice.
type SendError struct {
	Sent bool
	Err  error
}

func (e *SendError) Error() string { return e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// Errors a stage or transport reports for a message it could not deliver.
var (
	// ErrSessionLost means the server forgot the session and it could not be
	// re-established.
	ErrSessionLost = errors.New("session lost")
	// ErrUnavailable marks a failure to reach the peer after the transport
	// waited as long as it is configured to (or after it stopped): sending
	// again at once would only wait again, so the retry stage does not.
	// Transports wrap it, or report errors that match it with errors.Is.
	ErrUnavailable = errors.New("peer unavailable")
	// ErrStreamEnded means a response stream closed before it carried the
	// answer to the request.
	ErrStreamEnded = errors.New("stream ended before the response")
	// ErrClosed means the gateway is shutting down.
	ErrClosed = errors.New("gateway closed")
	// ErrAnswerElsewhere means the server took a request without answering
	// it on its own exchange (HTTP 202, or a 2xx without a body): its answer,
	// if it comes, comes on another stream.
	ErrAnswerElsewhere = errors.New("the server took the request without answering it")
	// ErrCancelled means the client cancelled the request: it was not
	// delivered, or its answer is no longer wanted. No answer is due.
	ErrCancelled = errors.New("request cancelled by the client")
	// ErrExchangeOver means an HTTP exchange a server transport received
	// takes no more messages: its answer is complete, or its client went
	// away.
	ErrExchangeOver = errors.New("the exchange is over")
	// ErrBusy means an HTTP exchange cannot take a message now without
	// making the sender wait for something that waits for the sender; the
	// message should go elsewhere.
	ErrBusy = errors.New("the exchange is busy")
)

// Sent reports whether err leaves open that the request reached the peer.
// A 429, and a 503 with Retry-After, say it was not processed; a bare 503
// does not (a proxy may answer it after the server ran the request).
// Errors that are neither a *SendError nor a *StatusError count as sent, the
// safe assumption.
func Sent(err error) bool {
	var se *SendError
	if errors.As(err, &se) {
		return se.Sent
	}
	var st *StatusError
	if errors.As(err, &st) {
		switch st.Code {
		case http.StatusTooManyRequests:
			return false
		case http.StatusServiceUnavailable:
			return len(st.Header.Values("Retry-After")) == 0
		}
	}
	return true
}
