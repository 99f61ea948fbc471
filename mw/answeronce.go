package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultAnswerWait bounds how long [AnswerOnce] waits for the answer to a
// request the server took without answering it.
const DefaultAnswerWait = 120 * time.Second

// AnswerOnceOptions configures [AnswerOnce].
type AnswerOnceOptions struct {
	// Wait bounds the wait for the answer to a request the server took
	// without answering it (an HTTP 202): the answer may come on another
	// stream until then. 0 means [DefaultAnswerWait]; the relay passes its
	// read timeout.
	Wait time.Duration
	// Logger receives a debug line for every answer dropped; nil discards.
	Logger *slog.Logger
}

// AnswerOnce returns the stage that holds the relay to its promise: every
// request the client sends gets exactly one answer, and nothing else looks
// like one. It sits outermost in the relay's chain (see the package
// documentation).
//
// Server-bound, a request is in flight from the moment it passes until its
// Handle returns; a second request with the raw id of one in flight is
// refused with -32600 (its answer could not be told apart). A request the
// server took without answering it ([frame.ErrAnswerElsewhere], which the
// session stage lets through only while a stream that could carry the
// answer is open) waits for its answer for at most Wait, then fails with an
// error that says so. When the answer reached the client, an error of the
// chain is moot: Handle returns nil, and the edge adds nothing.
//
// Client-bound, the first response to a request in flight passes; a
// response to an id that is not in flight — answered already (a second
// answer on one stream, a late answer to an attempt retried), or never
// sent — is dropped (logged at debug). Notifications, server requests and
// batches pass untouched.
func AnswerOnce(o AnswerOnceOptions) Middleware {
	if o.Wait <= 0 {
		o.Wait = DefaultAnswerWait
	}
	return func(next Duplex) Duplex {
		a := &answerOnce{next: next, wait: o.Wait, log: loggerOrDiscard(o.Logger), inflight: make(map[frame.ID]*awaited)}
		return Duplex{ToServer: HandlerFunc(a.toServer), ToClient: HandlerFunc(a.toClient)}
	}
}

type answerOnce struct {
	next Duplex
	wait time.Duration
	log  *slog.Logger

	mu       sync.Mutex
	inflight map[frame.ID]*awaited
}

// awaited is a request in flight.
type awaited struct {
	answered bool
	// arrived is closed at the answer when somebody waits for it; nil
	// until then.
	arrived chan struct{}
}

func (a *answerOnce) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() != frame.Request {
		return a.next.ToServer.Handle(ctx, m)
	}
	id := m.ID()
	w := &awaited{}
	a.mu.Lock()
	if _, dup := a.inflight[id]; dup {
		a.mu.Unlock()
		return a.next.ToClient.Handle(ctx, frame.ErrorResponse(id, frame.CodeInvalidRequest, "invalid request: a request with this id is already in progress"))
	}
	a.inflight[id] = w
	a.mu.Unlock()

	err := a.next.ToServer.Handle(ctx, m)
	if errors.Is(err, frame.ErrAnswerElsewhere) {
		err = a.await(ctx, w, err)
	}
	a.mu.Lock()
	delete(a.inflight, id)
	answered := w.answered
	a.mu.Unlock()
	if answered && err != nil {
		a.log.Debug("the request was answered; its failure afterwards is moot", "id", id.String(), "err", err)
		return nil
	}
	return err
}

// await waits for the answer to a request the server took without
// answering it, for at most a.wait.
func (a *answerOnce) await(ctx context.Context, w *awaited, cause error) error {
	a.mu.Lock()
	if w.answered {
		a.mu.Unlock()
		return nil
	}
	if w.arrived == nil {
		w.arrived = make(chan struct{})
	}
	arrived := w.arrived
	a.mu.Unlock()
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case <-arrived:
		return nil
	case <-t.C:
		return fmt.Errorf("no answer within %v: %v, and none came on the session's stream", a.wait, cause)
	case <-ctx.Done():
		return fmt.Errorf("no answer came before the gateway closed: %v: %w", cause, context.Cause(ctx))
	}
}

func (a *answerOnce) toClient(ctx context.Context, m frame.Message) error {
	if !m.Kind().IsResponse() {
		return a.next.ToClient.Handle(ctx, m)
	}
	a.mu.Lock()
	w := a.inflight[m.ID()]
	if w == nil || w.answered {
		a.mu.Unlock()
		a.log.Debug("dropped an answer to a request not in flight", "id", m.ID().String(), "answered_already", w != nil)
		return nil
	}
	w.answered = true
	if w.arrived != nil {
		close(w.arrived)
	}
	a.mu.Unlock()
	return a.next.ToClient.Handle(ctx, m)
}
