package mw

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// DefaultCacheTTL is the ttlMs [StampResults] gives the results of the
// cacheable methods: serve's --cache-ttl-ms default.
const DefaultCacheTTL = 60 * time.Second

// cacheScopePrivate is the cacheScope StampResults gives: a result of a
// session-era server may depend on who asked, and "private" never crosses
// authorisation contexts.
const cacheScopePrivate = "private"

// StampOptions configures [StampResults].
type StampOptions struct {
	// CacheTTL is the ttlMs of the cache hints: 0 means DefaultCacheTTL,
	// a negative value ttlMs 0 (the client may not reuse the result).
	CacheTTL time.Duration
	// Logger receives a debug line for a result it cannot stamp; nil
	// discards.
	Logger *slog.Logger
}

// StampResults returns the era bridge that gives a 2026-07-28 client the
// results of a session-era server in the shape MCP 2026-07-28 requires.
// Serve lists it in the entry chain of a child that speaks only the
// session era, and the relay in its session-era chain for the lines of a
// 2026-07-28 host (see the package documentation).
//
// Server-bound it notes the method of every request of a 2026-07-28
// client ([ClassifyEra]) by raw id, and forgets it when the request is
// answered (or its Handle fails, or the connection ([ConnOf]) closes):
// what it keeps is bounded by the requests in flight. Other messages pass
// untouched.
//
// Client-bound, each result answering such a request gets, unless it has
// them already:
//
//   - resultType "complete" (a result with another resultType,
//     input_required say, keeps it and gets no cache hints);
//   - result._meta["io.modelcontextprotocol/serverInfo"]: the serverInfo of
//     the server's initialize result ([Conn.ServerInitialize]), when the
//     handshake was made; a _meta that is not an object is left alone;
//   - on a complete result of one of the six cacheable methods
//     (server/discover, tools/list, prompts/list, resources/list,
//     resources/templates/list, resources/read): ttlMs (CacheTTL in
//     milliseconds) and cacheScope "private".
//
// The members are added at the end of result (serverInfo at the end of
// an existing _meta), in one edit; every other byte passes as the server
// wrote it, and a result that needs nothing passes as the same bytes. A
// result that is not an object, an error response, and everything else
// pass untouched.
//
// StampResults owns the cache hints of the whole bridge: [LocalDiscover],
// listed inside it, leaves ttlMs and cacheScope of its DiscoverResult to
// it.
func StampResults(o StampOptions) Middleware {
	ttl := o.CacheTTL
	switch {
	case ttl == 0:
		ttl = DefaultCacheTTL
	case ttl < 0:
		ttl = 0
	}
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		s := &stampResults{
			next:    next,
			log:     log,
			ttl:     strconv.AppendInt(nil, ttl.Milliseconds(), 10),
			methods: make(map[frame.ID]string),
		}
		return Duplex{ToServer: HandlerFunc(s.toServer), ToClient: HandlerFunc(s.toClient)}
	}
}

type stampResults struct {
	next Duplex
	log  *slog.Logger
	ttl  []byte // ttlMs, as JSON

	watch sync.Once // registers the Conn's OnClose, once

	mu sync.Mutex
	// methods holds the method of each request of a 2026-07-28 client in
	// flight, by raw id.
	methods map[frame.ID]string
}

func (s *stampResults) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() != frame.Request || ClassifyEra(m) != EraStateless {
		return s.next.ToServer.Handle(ctx, m)
	}
	if c := ConnOf(ctx); c != nil {
		s.watch.Do(func() { c.OnClose(func(error) { s.forgetAll() }) })
	}
	id := m.ID()
	s.mu.Lock()
	s.methods[id] = m.Method()
	s.mu.Unlock()
	err := s.next.ToServer.Handle(ctx, m)
	if err != nil {
		// Undelivered: no answer will come to forget it by.
		s.take(id)
	}
	return err
}

func (s *stampResults) toClient(ctx context.Context, m frame.Message) error {
	if !m.Kind().IsResponse() {
		return s.next.ToClient.Handle(ctx, m)
	}
	method, ok := s.take(m.ID())
	if !ok || m.Kind() != frame.Result {
		return s.next.ToClient.Handle(ctx, m)
	}
	var serverInfo string
	if c := ConnOf(ctx); c != nil {
		if init, ok := c.ServerInitialize(); ok {
			if v := init.Get("result.serverInfo"); v.IsObject() {
				serverInfo = v.Raw
			}
		}
	}
	out, err := stampResult(m, method, serverInfo, s.ttl)
	if err != nil {
		s.log.Debug("result not stamped", "method", method, "id", m.ID().String(), "err", err)
		out = m
	}
	return s.next.ToClient.Handle(ctx, out)
}

// take removes and returns the method noted for id.
func (s *stampResults) take(id frame.ID) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	method, ok := s.methods[id]
	if ok {
		delete(s.methods, id)
	}
	return method, ok
}

// forgetAll drops every request noted: the connection is over.
func (s *stampResults) forgetAll() {
	s.mu.Lock()
	clear(s.methods)
	s.mu.Unlock()
}

// hasMember reports whether object obj has a member named key. Unlike a
// gjson path with an escaped key, it builds no string.
func hasMember(obj gjson.Result, key string) bool {
	found := false
	obj.ForEach(func(k, _ gjson.Result) bool {
		found = k.Str == key
		return !found
	})
	return found
}

// stampResult returns result message m (answering method) with what
// StampResults adds; m itself when it needs nothing. serverInfo is the
// raw serverInfo object ("" for none), ttl the raw ttlMs.
func stampResult(m frame.Message, method, serverInfo string, ttl []byte) (frame.Message, error) {
	res := m.Get("result")
	if !res.IsObject() {
		return m, nil
	}
	// tail holds the members appended to result, each after a comma;
	// inMeta the member appended to an existing _meta.
	var tail, inMeta []byte
	grow := func() {
		if tail == nil {
			tail = make([]byte, 0, 96+len(serverInfo))
		}
	}
	member := func(key string, raw []byte) {
		grow()
		tail = append(tail, ',', '"')
		tail = append(tail, key...)
		tail = append(tail, '"', ':')
		tail = append(tail, raw...)
	}
	rt := res.Get("resultType")
	complete := !rt.Exists() || (rt.Type == gjson.String && rt.Str == "complete")
	if !rt.Exists() {
		member("resultType", []byte(`"complete"`))
	}
	if complete && mcp.IsCacheable(method) {
		if !res.Get("ttlMs").Exists() {
			member("ttlMs", ttl)
		}
		if !res.Get("cacheScope").Exists() {
			member("cacheScope", []byte(`"`+cacheScopePrivate+`"`))
		}
	}
	const serverInfoKey = `"` + MetaServerInfo + `":`
	var meta gjson.Result
	if serverInfo != "" {
		meta = res.Get("_meta")
		switch {
		case !meta.Exists():
			grow()
			tail = append(tail, `,"_meta":{`+serverInfoKey...)
			tail = append(tail, serverInfo...)
			tail = append(tail, '}')
		case meta.IsObject() && !hasMember(meta, MetaServerInfo):
			inMeta = append(append(make([]byte, 0, len(serverInfoKey)+len(serverInfo)), serverInfoKey...), serverInfo...)
		}
	}
	if len(tail) == 0 && len(inMeta) == 0 {
		return m, nil
	}
	if !located(m.Bytes(), res) || (len(inMeta) > 0 && !located(m.Bytes(), meta)) {
		return m, errIndex("result")
	}
	var edits [2]rawInsert
	n := 0
	if len(inMeta) > 0 { // _meta sits inside result: its brace comes first
		edits[n] = objectAppend(meta, inMeta)
		n++
	}
	if len(tail) > 0 {
		edits[n] = objectAppend(res, tail[1:])
		n++
	}
	return insertRaw(m, edits[:n])
}

// rawInsert is bytes to put into a message at an offset of its bytes,
// after a comma when comma is set.
type rawInsert struct {
	at    int
	comma bool
	b     []byte
}

// errIndex reports a value whose offset in its message gjson did not
// give, so that it cannot be edited in place.
type errIndex string

func (e errIndex) Error() string { return "no offset for " + string(e) }

// insertRaw returns m with each edit's bytes inserted at its offset (the
// edits in increasing order of offset), in one copy; the side channel is
// kept.
func insertRaw(m frame.Message, edits []rawInsert) (frame.Message, error) {
	raw := m.Bytes()
	n := len(raw)
	for _, e := range edits {
		if e.at <= 0 || e.at >= len(raw) {
			return m, errIndex("an insert")
		}
		n += len(e.b) + 1
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range edits {
		out = append(out, raw[last:e.at]...)
		if e.comma {
			out = append(out, ',')
		}
		out = append(out, e.b...)
		last = e.at
	}
	out = append(out, raw[last:]...)
	edited, err := frame.ParseOwned(out)
	if err != nil {
		return m, err
	}
	return edited.WithHeaders(m.Header()), nil
}

// located reports whether v, read from the bytes raw, sits at its Index.
func located(raw []byte, v gjson.Result) bool {
	return v.Index > 0 && v.Index+len(v.Raw) <= len(raw) && string(raw[v.Index:v.Index+len(v.Raw)]) == v.Raw
}

// objectAppend returns the insert that appends members (raw "k":v pairs,
// comma-separated) to the object obj read from a message: before its
// closing brace, after a comma unless obj is empty.
func objectAppend(obj gjson.Result, members []byte) rawInsert {
	empty := strings.TrimSpace(obj.Raw[1:len(obj.Raw)-1]) == ""
	return rawInsert{at: obj.Index + len(obj.Raw) - 1, comma: !empty, b: members}
}
