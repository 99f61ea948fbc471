package mw

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// DefaultRelayAccessNotes bounds the requests [RelayAccessLog] follows at
// once when RelayAccessLogOptions.MaxNotes is 0.
const DefaultRelayAccessNotes = 4096

// RelayAccessLogOptions configures [RelayAccessLog].
type RelayAccessLogOptions struct {
	// Logger receives the records; nil discards them.
	Logger *slog.Logger
	// Level is the records' level: the relay writes them at Info with
	// --log-format json, at Debug with text.
	Level slog.Level
	// SessionID returns the id of the server session in use ("" for none);
	// records name its [SessionHash], never the id. nil leaves session out.
	SessionID func() string
	// MaxNotes bounds the requests followed at once; a request beyond it
	// is not logged (counted, and a warning says so once). 0 means
	// [DefaultRelayAccessNotes].
	MaxNotes int
	// Now is the clock of the durations; nil means time.Now.
	Now func() time.Time
}

// RelayAccessLog returns the relay's stage that logs one record per
// request of the host once it has ended, with the fields of [AccessLog]'s:
// msg "request", method, era (of the [Conn] the request's context
// carries: "session" or the stateless era's first revision,
// [mcp.Version20260728]), outcome, status (of a failure the
// server's HTTP status caused), duration, session ([SessionHash] of
// o.SessionID, never the id) and trace_id (of the host's
// params._meta.traceparent, else of the span [TraceHeaders] recorded).
//
// A request is followed from the moment it passes toward the server,
// keyed on its raw id (1 and "1" are different requests). Its record is
// written when the answer to that id passes toward the host (a result:
// outcome ok; an error: error), or when its Handle returns an error
// first, which the relay's edge answers itself: cancelled for a request
// the host cancelled (or whose context ended), else failed. A request
// whose Handle returns nil unanswered, or whose id is already followed,
// is not logged; nothing is kept for it after its Handle returns. At most
// o.MaxNotes requests are followed at once; the others pass unlogged and
// are counted. When the logger does not log at o.Level, every message
// passes untouched and nothing is allocated.
//
// It is the outermost stage of the relay (see the package
// documentation), so the answers the stages inside make themselves
// (AnswerOnce's refusals, the local answers of the era bridges) are
// logged too.
func RelayAccessLog(o RelayAccessLogOptions) Middleware {
	return func(next Duplex) Duplex {
		l := newRelayAccessLog(o, next)
		return Duplex{ToServer: HandlerFunc(l.toServer), ToClient: HandlerFunc(l.toClient)}
	}
}

func newRelayAccessLog(o RelayAccessLogOptions, next Duplex) *relayAccessLog {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxNotes <= 0 {
		o.MaxNotes = DefaultRelayAccessNotes
	}
	return &relayAccessLog{o: o, log: loggerOrDiscard(o.Logger), next: next, notes: make(map[frame.ID]*relayNote)}
}

type relayAccessLog struct {
	o    RelayAccessLogOptions
	log  *slog.Logger
	next Duplex

	mu    sync.Mutex
	notes map[frame.ID]*relayNote // requests followed, by raw id
	// pending is len(notes), read without the lock so that answers pass
	// without it while nothing is followed.
	pending atomic.Int64
	// unlogged counts the requests not followed because of MaxNotes.
	unlogged atomic.Uint64
}

// relayNote is one request followed.
type relayNote struct {
	requestNote // the trace id, which TraceHeaders may write
	id          frame.ID
	method      string
	start       time.Time
	conn        *Conn
	logged      bool // under relayAccessLog.mu
}

type relayNoteKey struct{}

func (l *relayAccessLog) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() != frame.Request || !l.log.Enabled(ctx, l.o.Level) {
		return l.next.ToServer.Handle(ctx, m)
	}
	n := &relayNote{id: m.ID(), method: m.Method(), start: l.o.Now(), conn: ConnOf(ctx)}
	if _, tp, ok, _ := metaTrace(m); ok {
		n.trace = tp
	}
	l.mu.Lock()
	_, dup := l.notes[n.id]
	full := !dup && len(l.notes) >= l.o.MaxNotes
	if !dup && !full {
		l.notes[n.id] = n
		l.pending.Add(1)
	}
	l.mu.Unlock()
	if full {
		if l.unlogged.Add(1) == 1 {
			l.log.Warn("access log: more requests in flight than it follows; those beyond are not logged", "max", l.o.MaxNotes)
		}
		return l.next.ToServer.Handle(ctx, m)
	}
	if dup {
		n.logged = true // AnswerOnce refuses it; its answer is not the first's
	}
	ctx = withRequestNote(context.WithValue(ctx, relayNoteKey{}, n), &n.requestNote)
	err := l.next.ToServer.Handle(ctx, m)
	l.mu.Lock()
	logNow := !n.logged && err != nil
	n.logged = true
	if l.notes[n.id] == n {
		delete(l.notes, n.id)
		l.pending.Add(-1)
	}
	l.mu.Unlock()
	if logNow {
		outcome, status := OutcomeFailed, 0
		var st *frame.StatusError
		switch {
		case errors.Is(err, frame.ErrCancelled), errors.Is(err, context.Canceled):
			outcome = OutcomeCancelled
		case errors.As(err, &st):
			status = st.Code
		}
		l.write(ctx, n, outcome, status)
	}
	return err
}

// toClient writes the record of the request an answer ends: the one
// whose context the answer travels in, else the one followed under its
// id.
func (l *relayAccessLog) toClient(ctx context.Context, m frame.Message) error {
	k := m.Kind()
	if (k != frame.Result && k != frame.Error) || l.pending.Load() == 0 && ctx.Value(relayNoteKey{}) == nil {
		return l.next.ToClient.Handle(ctx, m)
	}
	id := m.ID()
	n, _ := ctx.Value(relayNoteKey{}).(*relayNote)
	l.mu.Lock()
	if n == nil || n.id != id {
		n = l.notes[id]
	}
	if n != nil && n.logged {
		n = nil
	}
	if n != nil {
		n.logged = true
		if l.notes[id] == n {
			delete(l.notes, id)
			l.pending.Add(-1)
		}
	}
	l.mu.Unlock()
	if n != nil {
		outcome := OutcomeOK
		if k == frame.Error {
			outcome = OutcomeError
		}
		l.write(ctx, n, outcome, 0)
	}
	return l.next.ToClient.Handle(ctx, m)
}

// write logs the record of the request n.
func (l *relayAccessLog) write(ctx context.Context, n *relayNote, outcome string, status int) {
	r := accessRecord{method: n.method, outcome: outcome, status: status, duration: l.o.Now().Sub(n.start)}
	if n.conn != nil {
		switch n.conn.Era() {
		case EraSession:
			r.era = "session"
		case EraStateless:
			r.era = mcp.Version20260728
		}
	}
	if l.o.SessionID != nil {
		r.session = l.o.SessionID()
	}
	n.mu.Lock()
	r.trace = n.trace
	n.mu.Unlock()
	logRequest(ctx, l.log, l.o.Level, r)
}
