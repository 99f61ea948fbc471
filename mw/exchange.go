package mw

import (
	"context"
	"net/http"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Exchange is one HTTP request that serve's transport received, as the
// stages see it: the way back to the client that sent it. transport's
// *Exchange is one; a stage may wrap it to see what is sent on it.
//
// The transport hands each request to the chain as a message — a POST's
// body with the request headers as its side channel; for a GET or a
// DELETE, no bytes and only the headers — in a context that carries the
// Exchange ([ExchangeOf]). A stage that refuses the request returns an
// error ([Refuse]); one that takes it puts the answer's messages on the
// Exchange and ends it, from any goroutine, at any time.
type Exchange interface {
	// Method returns the HTTP method of the request: POST, GET or DELETE.
	Method() string
	// EventStream reports whether the answer is an event stream, which
	// can carry any message; a JSON answer carries only the responses to
	// the POST's requests.
	EventStream() bool
	// Send queues m on the answer, as an event named eventID on an event
	// stream ("" for none, or for NumberEvents to name). The side channel
	// of the answer's first message gives header fields of the HTTP
	// response. A response is queued at once; anything else may wait for
	// room while the answer is being written, and is refused with
	// frame.ErrBusy when it cannot be queued without waiting for the
	// handler that received the exchange. Send fails with
	// frame.ErrExchangeOver once the exchange is over or ended, and with
	// ctx's error when ctx ends while it waits.
	Send(ctx context.Context, m frame.Message, eventID string) error
	// SendLast is Send followed by End, at once: m and the end of the
	// answer go out together.
	SendLast(ctx context.Context, m frame.Message, eventID string) error
	// End says the answer is complete: what is queued is written and the
	// HTTP response finished. A POST carrying requests, and a GET's
	// stream, stay open until End or until the client goes away.
	End()
	// Cut ends the answer at once and returns, in order, the messages
	// queued and not yet taken for writing, which are not written; a
	// message taken before has been named (NumberEvents) by the time Cut
	// returns. It returns nil once the exchange is over.
	Cut() []frame.Message
	// OnDone has f run once the exchange is over (its answer written, or
	// its client gone) with the messages queued and never taken for
	// writing nor handed back by Cut; at once if it is over already. f
	// never runs inside a call of the exchange's other methods.
	OnDone(f func(unsent []frame.Message))
	// HoldHeader makes an event-stream answer's header wait for its first
	// message, however long it takes.
	HoldHeader()
	// PreferJSON has a POST's event-stream answer go out as one JSON
	// body instead when its client accepts both and, by the time its
	// header would go out, the answer is complete and is one response
	// alone.
	PreferJSON()
	// NumberEvents has name give the event id of each message sent
	// without one, as it is taken for writing. name must not call Cut.
	NumberEvents(name func(frame.Message) string)
	// Prime has an event-stream answer open with an event named eventID
	// that carries no message (empty data) and, when retry is positive,
	// the reconnection time retry: a client can resume the stream from it
	// before any message came.
	Prime(eventID string, retry time.Duration)
}

type exchangeKey struct{}

// WithExchange returns ctx carrying x.
func WithExchange(ctx context.Context, x Exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// ExchangeOf returns the Exchange ctx carries, or nil for a message that
// did not come from an HTTP server.
func ExchangeOf(ctx context.Context) Exchange {
	x, _ := ctx.Value(exchangeKey{}).(Exchange)
	return x
}

// RefuseRetryAfter is the Retry-After, in seconds, that [Refuse] gives a
// 503 (the request was not taken; try again later) unless the stage sets
// its own on the error's Header.
const RefuseRetryAfter = "1"

// Refuse returns the error a stage of serve returns to refuse a request at
// the HTTP level: the transport answers with status and the JSON-RPC error
// {code, msg} under id (null when id is empty) as the body. A 503 carries
// Retry-After (RefuseRetryAfter): every 503 of serve means the request was
// not taken and may be sent again later. In the relay the same error
// reaches the client as that JSON-RPC error (see [ErrorFor]).
func Refuse(status int, id frame.ID, code int, msg string) error {
	return RefuseWithData(status, id, code, msg, nil)
}

// RefuseWithData is [Refuse] with the JSON-RPC error's data member, which
// must be valid JSON (nil for none): a 2026-07-28 server's -32022, say,
// names the versions it supports there.
func RefuseWithData(status int, id frame.ID, code int, msg string, data []byte) error {
	h := make(http.Header, 2)
	h.Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", RefuseRetryAfter)
	}
	return &frame.StatusError{Code: status, Header: h, Body: frame.ErrorResponseData(id, code, msg, data).Bytes()}
}
