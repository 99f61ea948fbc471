package mw

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultMaxIDsInFlight bounds the request ids [RefuseDuplicateIDs]
// remembers.
const DefaultMaxIDsInFlight = 4096

// DuplicateIDsOptions configures [RefuseDuplicateIDs].
type DuplicateIDsOptions struct {
	// Max bounds the ids remembered; beyond it the oldest is forgotten
	// (with a warning). 0 means [DefaultMaxIDsInFlight].
	Max int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// RefuseDuplicateIDs returns the stage that refuses, with 400 and -32600, a
// client request whose raw id is still in flight at the server, since
// answers are routed by raw id and the server's answer to the one could be
// taken for the answer to the other (1 and "1" are different ids). It
// sits inside serve's routing stage (see the package documentation).
//
// An id is in flight from the moment its request passes until the
// server's response to it passes back, or the client cancels it — also
// when the client that sent it went away, since the server may still
// answer. A batch is judged as a whole: one repeated id (with a request in
// flight, or inside the batch) refuses it all, and nothing of it is
// delivered. A request the stage inside could not deliver frees its id.
func RefuseDuplicateIDs(o DuplicateIDsOptions) Middleware {
	if o.Max <= 0 {
		o.Max = DefaultMaxIDsInFlight
	}
	return func(next Duplex) Duplex {
		d := &duplicates{next: next, max: o.Max, log: loggerOrDiscard(o.Logger), ids: make(map[frame.ID]*list.Element)}
		return Duplex{ToServer: HandlerFunc(d.toServer), ToClient: HandlerFunc(d.toClient)}
	}
}

type duplicates struct {
	next Duplex
	max  int
	log  *slog.Logger

	mu    sync.Mutex
	ids   map[frame.ID]*list.Element // in flight → its place in order
	order list.List                  // of frame.ID, oldest first
}

// errDuplicateID is the text of the refusal.
const errDuplicateID = "invalid request: a request with this id is already in progress"

func (d *duplicates) toServer(ctx context.Context, m frame.Message) error {
	var ids []frame.ID
	for el := range m.Elements() {
		switch {
		case el.Kind() == frame.Request:
			ids = append(ids, el.ID())
		case el.Method() == cancelMethod:
			if id, ok := cancelledRequestID(el); ok {
				d.forget(id)
			}
		}
	}
	if len(ids) == 0 {
		return d.next.ToServer.Handle(ctx, m)
	}
	if !d.add(ids) {
		return Refuse(http.StatusBadRequest, ids[0], frame.CodeInvalidRequest, errDuplicateID)
	}
	err := d.next.ToServer.Handle(ctx, m)
	if err != nil {
		var ce *CancelledError
		if errors.As(err, &ce) {
			ids = ce.IDs // the rest of the batch was delivered
		}
		for _, id := range ids {
			d.forget(id)
		}
	}
	return err
}

func (d *duplicates) toClient(ctx context.Context, m frame.Message) error {
	if m.Kind().IsResponse() {
		d.forget(m.ID())
	}
	return d.next.ToClient.Handle(ctx, m)
}

// add records ids as in flight, unless one of them is already (or repeats
// within ids); it reports whether it did.
func (d *duplicates) add(ids []frame.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, id := range ids {
		if _, dup := d.ids[id]; dup {
			for _, added := range ids[:i] {
				d.removeLocked(added)
			}
			return false
		}
		d.ids[id] = d.order.PushBack(id)
	}
	for d.order.Len() > d.max {
		oldest := d.order.Front().Value.(frame.ID)
		d.log.Warn("too many request ids in flight: forgetting the oldest", "id", oldest.String(), "max", d.max)
		d.removeLocked(oldest)
	}
	return true
}

// forget frees id.
func (d *duplicates) forget(id frame.ID) {
	d.mu.Lock()
	d.removeLocked(id)
	d.mu.Unlock()
}

func (d *duplicates) removeLocked(id frame.ID) {
	if e, ok := d.ids[id]; ok {
		d.order.Remove(e)
		delete(d.ids, id)
	}
}
