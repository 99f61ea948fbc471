package mw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// AccessLogOptions configures [AccessLog].
type AccessLogOptions struct {
	// Logger receives the records; nil discards them.
	Logger *slog.Logger
	// Level is the records' level: serve writes them at Info with
	// --log-format json, at Debug with text.
	Level slog.Level
	// Era is the value of the records' era field; "" leaves it out.
	Era string
	// Now is the clock of the durations; nil means time.Now.
	Now func() time.Time
}

// AccessLog returns serve's stage that logs one record per request once
// it has ended (its answer written, or it was refused): msg "request",
// and the fields method, era, outcome (see [OutcomeOK] and the others),
// status (the HTTP status of a refusal), duration, session (a hash of
// the session id the request or its answer names: [SessionHash], never
// the id) and trace_id (of the span [TraceContext] recorded, or of the
// trace the request continues; TraceContext must sit inside this stage
// to tell it). Notifications, responses, batches, GETs and DELETEs pass
// unlogged. When the logger does not log at Level, requests pass
// untouched.
//
// In serve it is the first stage of each era's chain after the metrics
// (see the package documentation), so refusals by the era's checks are
// logged too.
func AccessLog(o AccessLogOptions) Middleware {
	log := loggerOrDiscard(o.Logger)
	if o.Now == nil {
		o.Now = time.Now
	}
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if m.Kind() != frame.Request || !log.Enabled(ctx, o.Level) {
				return next.Handle(ctx, m)
			}
			start := o.Now()
			note := &requestNote{}
			ctx = withRequestNote(ctx, note)
			method := m.Method()
			return serveRequest(ctx, m, next, func(e requestEnd) {
				note.mu.Lock()
				trace := note.trace
				note.mu.Unlock()
				logRequest(ctx, log, o.Level, accessRecord{
					method: method, era: o.Era, outcome: e.outcome, status: e.status,
					duration: o.Now().Sub(start), session: e.session, trace: trace,
				})
			})
		})
	})
}

// accessRecord is one request's access record: what AccessLog and
// RelayAccessLog write.
type accessRecord struct {
	method, era, outcome string
	status               int // of a refusal; 0 for none
	duration             time.Duration
	session              string // the session id, logged as its hash; "" for none
	trace                frame.TraceParent
}

// logRequest writes r as a record "request" at level: method, era (when
// known), outcome, status (when set), duration, session (its hash, never
// the id) and trace_id (when valid).
func logRequest(ctx context.Context, log *slog.Logger, level slog.Level, r accessRecord) {
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("method", r.method))
	if r.era != "" {
		attrs = append(attrs, slog.String("era", r.era))
	}
	attrs = append(attrs, slog.String("outcome", r.outcome))
	if r.status != 0 {
		attrs = append(attrs, slog.Int("status", r.status))
	}
	attrs = append(attrs, slog.Duration("duration", r.duration))
	if r.session != "" {
		attrs = append(attrs, slog.String("session", SessionHash(r.session)))
	}
	if r.trace.Valid() {
		attrs = append(attrs, slog.String("trace_id", r.trace.TraceIDString()))
	}
	log.LogAttrs(context.WithoutCancel(ctx), level, "request", attrs...)
}

// sessionHashLen is how many hex digits of a session id's hash name it.
const sessionHashLen = 12

// SessionHash returns what logs show of a session id: the start of its
// SHA-256 in hex, which tells sessions apart without revealing the id
// (a bearer of the session) or any part of it.
func SessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:sessionHashLen/2])
}
