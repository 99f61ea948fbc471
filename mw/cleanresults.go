package mw

import (
	"context"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// modernOnlyResultFields are the members of a 2026-07-28 result that a
// session-era client has no word for: resultType (when "complete": a
// session-era result is complete by being a result) and the caching hints
// ttlMs and cacheScope. Strict session-era clients reject unknown members
// on some results (an empty result, say).
var modernOnlyResultFields = []string{"resultType", "ttlMs", "cacheScope"}

// CleanResults returns the stage that gives a session-era client what a
// 2026-07-28 server sends in the shape it knows:
//
//   - resultType "complete", ttlMs and cacheScope are removed from the
//     result of every request the client sent; a result whose resultType
//     is anything else ("input_required", which the MRTR bridge deals
//     with inside, or an extension's value) keeps it;
//   - the _meta keys 2026-07-28 introduced ([mcp.IsModernMetaKey]:
//     io.modelcontextprotocol/serverInfo, subscriptionId, …) are removed
//     from those results' _meta, from the error.data._meta of those
//     requests' errors, and from the params._meta of every notification
//     and request the server sends the client; a _meta left empty goes
//     too. Other keys, of the reserved prefix or not, stay.
//
// Every other byte passes as the server wrote it.
//
// It sits outermost in the relay's chain for a 2026-07-28 server (see the
// package documentation), so it sees results as they finally leave for
// the client, after every stage that reads those fields (the response
// cache, the MRTR bridge). It acts while the connection ([ConnOf]) speaks
// 2026-07-28, on the answers to requests of a session-era client
// ([ClassifyEra]), and on the server's notifications and requests once a
// session-era client's initialize was answered ([Conn.ClientInitialize]);
// a 2026-07-28 client gets everything untouched.
func CleanResults() Middleware {
	return func(next Duplex) Duplex {
		s := &cleanResults{next: next, sessionEra: make(map[frame.ID]int)}
		return Duplex{ToServer: HandlerFunc(s.toServer), ToClient: HandlerFunc(s.toClient)}
	}
}

type cleanResults struct {
	next Duplex

	mu sync.Mutex
	// sessionEra counts the requests of a session-era client in flight, by
	// raw id.
	sessionEra map[frame.ID]int
}

func (s *cleanResults) toServer(ctx context.Context, m frame.Message) error {
	c := ConnOf(ctx)
	if m.Kind() != frame.Request || c == nil || c.Era() != EraStateless || ClassifyEra(m) != EraSession {
		return s.next.ToServer.Handle(ctx, m)
	}
	id := m.ID()
	s.mu.Lock()
	s.sessionEra[id]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.sessionEra[id]--; s.sessionEra[id] <= 0 {
			delete(s.sessionEra, id)
		}
		s.mu.Unlock()
	}()
	return s.next.ToServer.Handle(ctx, m)
}

func (s *cleanResults) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Result, frame.Error:
		s.mu.Lock()
		_, sessionEra := s.sessionEra[m.ID()]
		s.mu.Unlock()
		switch {
		case !sessionEra:
		case m.Kind() == frame.Result:
			m = withoutMetaKeys(sessionEraResult(m), "result._meta", mcp.IsModernMetaKey)
		default:
			m = withoutMetaKeys(m, "error.data._meta", mcp.IsModernMetaKey)
		}
	case frame.Notification, frame.Request:
		if sessionEraClient(ctx) {
			m = withoutMetaKeys(m, "params._meta", mcp.IsModernMetaKey)
		}
	}
	return s.next.ToClient.Handle(ctx, m)
}

// sessionEraClient reports whether ctx's connection speaks 2026-07-28 to
// its server for a client of the session era: one whose initialize was
// answered.
func sessionEraClient(ctx context.Context) bool {
	c := ConnOf(ctx)
	if c == nil || c.Era() != EraStateless {
		return false
	}
	_, ok := c.ClientInitialize()
	return ok
}

// sessionEraResult returns m without the members a session-era client does
// not know (see modernOnlyResultFields); m itself when it has none.
func sessionEraResult(m frame.Message) frame.Message {
	out := m
	for _, f := range modernOnlyResultFields {
		v := out.Get("result." + f)
		if !v.Exists() || (f == "resultType" && v.String() != "complete") {
			continue
		}
		if d, err := out.Delete("result." + f); err == nil {
			out = d
		}
	}
	return out
}
