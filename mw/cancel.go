package mw

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Defaults and bounds of [CancelFilter].
const (
	// DefaultCancelTTL is how long a cancelled request id is remembered.
	DefaultCancelTTL = 60 * time.Second
	// cancelSweepAt is the size past which expired ids are swept on insert.
	cancelSweepAt = 256
	// cancelMaxIDs is the hard cap on remembered ids; the oldest go first.
	cancelMaxIDs = 4096
)

// cancelMethod is the notification a client sends to cancel a request.
const cancelMethod = mcp.MethodCancelled

// CancelOptions configures [CancelFilter].
type CancelOptions struct {
	// TTL is how long a cancelled id is remembered; 0 means
	// [DefaultCancelTTL].
	TTL time.Duration
	// Now is the clock; nil means time.Now. Expiry is measured on the
	// monotonic clock when the times carry a monotonic reading.
	Now func() time.Time
	// Logger receives debug lines for dropped responses; nil discards.
	Logger *slog.Logger
}

// CancelFilter returns the stage that makes a client's
// notifications/cancelled stick. Both pipelines list it (see the package
// documentation): outermost in the relay's chain, so no inner stage ever
// delivers an answer the client has given up on, and in each session of
// serve, inside routing and duplicate-id refusal.
//
// Server-bound:
//
//   - A request runs the inner chain under a child context registered as
//     in flight for the request's raw id. When the client cancels that id
//     the context is cancelled (the transport aborts the POST) and Handle
//     returns [frame.ErrCancelled] whatever the inner chain returned: the
//     client asked us to forget the request, so neither a response nor a
//     gateway error is due (the edge answers nothing; see [ErrorFor]). A
//     request whose response has passed client-bound already is not
//     aborted: its Handle may go on after its answer (a call answered
//     input_required while the server still runs it, [ParkChildRequests]
//     in the relay), and the client cancels an answered request only to
//     drop it, which it has. So
//     does a request that fails once its cancel is recorded (a server that
//     ends the request's stream on the cancel fails it before the abort). A
//     request whose id is already recorded as cancelled (the cancel
//     overtook it, or the client reused a cancelled id, which MCP forbids)
//     is not sent at all, and Handle returns frame.ErrCancelled too.
//   - A notifications/cancelled (method at the top level, params an object)
//     records params.requestId — its raw token, a number or a string, so 1
//     and "1" differ and 0 counts; null never counts — for the TTL, aborts
//     the in-flight request with that id, and is forwarded unchanged.
//   - Everything else passes.
//
// Client-bound, a result or error whose id is recorded is dropped (logged at
// debug). Notifications, server→client requests (even with a colliding id),
// batches and malformed messages pass.
//
// Memory is bounded: expired ids are swept once more than 256 are recorded,
// and at most 4096 are kept, the oldest evicted first.
func CancelFilter(o CancelOptions) Middleware {
	return func(next Duplex) Duplex {
		f := newCancelFilter(o, next)
		return Duplex{
			ToServer: HandlerFunc(f.toServer),
			ToClient: HandlerFunc(f.toClient),
		}
	}
}

func newCancelFilter(o CancelOptions, next Duplex) *cancelFilter {
	if o.TTL <= 0 {
		o.TTL = DefaultCancelTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &cancelFilter{
		next:     next,
		ttl:      o.TTL,
		now:      o.Now,
		log:      loggerOrDiscard(o.Logger),
		recorded: make(map[frame.ID]*list.Element),
		inflight: make(map[frame.ID][]*inflightRequest),
	}
}

type cancelFilter struct {
	next Duplex
	ttl  time.Duration
	now  func() time.Time
	log  *slog.Logger

	mu sync.Mutex
	// recorded maps a cancelled id to its element in order, which lists
	// cancelledID values oldest first (the TTL is fixed, so that is also
	// soonest-expiring first).
	recorded map[frame.ID]*list.Element
	order    list.List
	// inflight holds the requests being handled, by raw id. Ids should be
	// unique among requests in flight, but a misbehaving client may repeat
	// one; all of them are aborted then.
	inflight map[frame.ID][]*inflightRequest
}

type cancelledID struct {
	id      frame.ID
	expires time.Time
}

type inflightRequest struct {
	cancel context.CancelCauseFunc
	// answered is set, under the filter's lock, once a response with the
	// request's id has passed client-bound.
	answered bool
}

func (f *cancelFilter) toServer(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Request:
		return f.request(ctx, m)
	case frame.Notification:
		if m.Method() == cancelMethod {
			if id, ok := cancelledRequestID(m); ok {
				// Record first, so a response racing in is dropped; forward
				// while the request is still in flight, so stages inside
				// that rewrite ids (pagination merge) still know it and the
				// server hears the cancel before its connection drops; then
				// abort.
				running := f.record(id)
				err := f.next.ToServer.Handle(ctx, m)
				for _, r := range running {
					r.cancel(frame.ErrCancelled)
				}
				return err
			}
		}
	}
	return f.next.ToServer.Handle(ctx, m)
}

func (f *cancelFilter) request(ctx context.Context, m frame.Message) error {
	id := m.ID()
	now := f.now()
	ctx, cancel := context.WithCancelCause(ctx)
	r := &inflightRequest{cancel: cancel}
	f.mu.Lock()
	if f.isCancelledLocked(id, now) {
		f.mu.Unlock()
		cancel(nil)
		// The cancel overtook its request (they are handled concurrently),
		// or the client reused an id it cancelled, which MCP forbids.
		f.log.Debug("not sending a request the client already cancelled", "id", id.String())
		return frame.ErrCancelled
	}
	f.inflight[id] = append(f.inflight[id], r)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.untrackLocked(id, r)
		f.mu.Unlock()
		cancel(nil)
	}()

	err := f.next.ToServer.Handle(ctx, m)
	switch {
	case errors.Is(context.Cause(ctx), frame.ErrCancelled):
		return frame.ErrCancelled
	case err != nil && f.isCancelled(id):
		// The cancel was recorded while the request failed: a server that
		// ends the request's stream on the cancel makes it fail before the
		// filter aborts it. No answer is due either way.
		return frame.ErrCancelled
	}
	return err
}

// record records id as cancelled and returns the requests in flight under
// it, for the caller to abort.
func (f *cancelFilter) record(id frame.ID) []*inflightRequest {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordLocked(id, now)
	var running []*inflightRequest
	for _, r := range f.inflight[id] {
		if !r.answered {
			running = append(running, r)
		}
	}
	return running
}

func (f *cancelFilter) toClient(ctx context.Context, m frame.Message) error {
	if !m.Kind().IsResponse() || m.ID().IsNull() {
		return f.next.ToClient.Handle(ctx, m)
	}
	id, now := m.ID(), f.now()
	f.mu.Lock()
	if f.isCancelledLocked(id, now) {
		f.mu.Unlock()
		f.log.Debug("dropping the response to a cancelled request", "id", id.String())
		return nil
	}
	for _, r := range f.inflight[id] {
		r.answered = true
	}
	f.mu.Unlock()
	return f.next.ToClient.Handle(ctx, m)
}

func (f *cancelFilter) isCancelled(id frame.ID) bool {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.isCancelledLocked(id, now)
}

func (f *cancelFilter) isCancelledLocked(id frame.ID, now time.Time) bool {
	e, ok := f.recorded[id]
	if !ok {
		return false
	}
	if !now.Before(e.Value.(cancelledID).expires) {
		f.removeLocked(e)
		return false
	}
	return true
}

func (f *cancelFilter) recordLocked(id frame.ID, now time.Time) {
	c := cancelledID{id: id, expires: now.Add(f.ttl)}
	if e, ok := f.recorded[id]; ok {
		e.Value = c
		f.order.MoveToBack(e)
		return
	}
	f.recorded[id] = f.order.PushBack(c)
	if len(f.recorded) > cancelSweepAt {
		for e := f.order.Front(); e != nil; e = f.order.Front() {
			if now.Before(e.Value.(cancelledID).expires) {
				break
			}
			f.removeLocked(e)
		}
	}
	for len(f.recorded) > cancelMaxIDs {
		f.removeLocked(f.order.Front())
	}
}

func (f *cancelFilter) removeLocked(e *list.Element) {
	delete(f.recorded, e.Value.(cancelledID).id)
	f.order.Remove(e)
}

func (f *cancelFilter) untrackLocked(id frame.ID, r *inflightRequest) {
	rs := f.inflight[id]
	for i, x := range rs {
		if x == r {
			rs = append(rs[:i], rs[i+1:]...)
			break
		}
	}
	if len(rs) == 0 {
		delete(f.inflight, id)
		return
	}
	f.inflight[id] = rs
}

// cancelledRequestID returns the raw params.requestId of a
// notifications/cancelled whose params is an object and whose requestId is a
// number or a string.
func cancelledRequestID(m frame.Message) (frame.ID, bool) {
	params := m.Params()
	if !params.IsObject() {
		return "", false
	}
	r := params.Get("requestId")
	if r.Type != gjson.Number && r.Type != gjson.String {
		return "", false
	}
	return frame.ID(r.Raw), true
}

// retargetCancel returns the notifications/cancelled m naming id instead
// of the request it named: a client's cancel pointed at the id a stage
// sent its request under. ok is false when m could not be edited.
func retargetCancel(m frame.Message, id frame.ID) (out frame.Message, ok bool) {
	out, err := m.Set("params.requestId", id.Raw())
	return out, err == nil
}

// loggerOrDiscard returns l, or a logger that discards everything.
func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// cancelNotification returns notifications/cancelled for id, with reason
// ([mcp.CancelledNotification]).
func cancelNotification(id frame.ID, reason string) frame.Message {
	return mcp.CancelledNotification(id, reason)
}
