package mw

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Remap sends requests a stage originates under ids it mints, and catches
// their answers before they reach the client. Pagination merge sends each
// page this way, session recovery its replayed initialize.
//
// A request made on behalf of a client request (a page of the client's
// list) names that request's id: while it is in flight, a client's
// notifications/cancelled for the client's id is pointed at the minted id
// ([Remap.RetargetCancel]), so that the server cancels what it is really
// running.
//
// The stage calls [Remap.Capture] first thing on its client-bound side and
// [Remap.RetargetCancel] on server-bound notifications. A Remap is safe for
// concurrent use; its zero value is not usable: see [NewRemap].
type Remap struct {
	stage string
	ids   IDMinter

	mu      sync.Mutex
	waiting map[frame.ID]chan frame.Message
	// minted maps the id of a client request to the id of the request
	// made on its behalf that is in flight.
	minted map[frame.ID]frame.ID
}

// NewRemap returns a Remap whose ids read "mcp-stdio/<stage>/<n>".
func NewRemap(stage string) *Remap {
	return &Remap{
		stage:   stage,
		waiting: make(map[frame.ID]chan frame.Message),
		minted:  make(map[frame.ID]frame.ID),
	}
}

// Call sends req under a fresh minted id to next and returns the answer to
// it. clientID is the client request it is made for ("" for none). next
// must keep the contract of the relay's chain: Handle of a request returns
// once its answer has been delivered client-bound (where Capture took it);
// when it returns nil with no answer taken, Call fails with
// [frame.ErrStreamEnded]. An error of next is returned as it is.
func (r *Remap) Call(ctx context.Context, next Handler, req frame.Message, clientID frame.ID) (frame.Message, error) {
	return r.call(ctx, next, req, clientID, false)
}

// CallAndWait is [Remap.Call] for a next that answers later: the end of
// serve's chain, a child process, whose Handle returns once the request
// is written. It waits for the answer (which Capture takes, from any
// goroutine) until ctx ends, and then fails with ctx's error.
func (r *Remap) CallAndWait(ctx context.Context, next Handler, req frame.Message, clientID frame.ID) (frame.Message, error) {
	return r.call(ctx, next, req, clientID, true)
}

func (r *Remap) call(ctx context.Context, next Handler, req frame.Message, clientID frame.ID, wait bool) (frame.Message, error) {
	id := r.ids.Mint(r.stage)
	m, err := req.WithID(id)
	if err != nil {
		return frame.Message{}, err
	}
	answer := make(chan frame.Message, 1)
	r.mu.Lock()
	r.waiting[id] = answer
	if clientID != "" {
		r.minted[clientID] = id
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, id)
		if clientID != "" && r.minted[clientID] == id {
			delete(r.minted, clientID)
		}
		r.mu.Unlock()
	}()
	if err := next.Handle(ctx, m); err != nil {
		return frame.Message{}, err
	}
	if wait {
		select {
		case resp := <-answer:
			return resp, nil
		case <-ctx.Done():
			return frame.Message{}, fmt.Errorf("mw: %s request %s: %w", r.stage, id, ctx.Err())
		}
	}
	select {
	case resp := <-answer:
		return resp, nil
	default:
		return frame.Message{}, fmt.Errorf("mw: %s request %s: %w", r.stage, id, frame.ErrStreamEnded)
	}
}

// Capture takes m if it answers a request in flight under a minted id, and
// reports whether it did; the stage then does not pass m on.
func (r *Remap) Capture(m frame.Message) bool {
	if !m.Kind().IsResponse() || !IsMinted(m.ID()) {
		return false
	}
	r.mu.Lock()
	ch, ok := r.waiting[m.ID()]
	delete(r.waiting, m.ID())
	r.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// RetargetCancel returns m with its params.requestId replaced by the
// minted id in flight for it, when m is a notifications/cancelled naming a
// client request that has one; else m unchanged.
func (r *Remap) RetargetCancel(m frame.Message) frame.Message {
	if m.Kind() != frame.Notification || m.Method() != cancelMethod {
		return m
	}
	client, ok := cancelledRequestID(m)
	if !ok {
		return m
	}
	r.mu.Lock()
	id, ok := r.minted[client]
	r.mu.Unlock()
	if !ok {
		return m
	}
	if out, ok := retargetCancel(m, id); ok {
		return out
	}
	return m
}
