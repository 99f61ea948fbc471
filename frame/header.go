package frame

import (
	"context"
	"time"
)

// HTTP header names a message's side channel ([Message.Header]) carries.
// They are in canonical form, so they compare equal to the keys of an
// http.Header.
const (
	// HeaderSessionID names the session a session-era server assigned
	// (Streamable HTTP, 2025-03-26 to 2025-11-25).
	HeaderSessionID = "Mcp-Session-Id"
	// HeaderProtocolVersion carries the protocol version: the negotiated
	// one in the session era, the request's own in 2026-07-28.
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	// HeaderLastEventID resumes an event stream after the event it names.
	HeaderLastEventID = "Last-Event-Id"
)

// Sleep waits d, or until ctx is done and returns its error then. A wait
// of zero or less returns at once (ctx's error, if it is done). It is the
// one timed wait of the gateway's stages and transports, which take it as
// their default and let tests inject another.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return SleepUntil(ctx, t.C)
}

// SleepUntil is [Sleep] on a clock of the caller's: it waits until c
// delivers and returns nil, or until ctx is done and returns its error.
func SleepUntil(ctx context.Context, c <-chan time.Time) error {
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
