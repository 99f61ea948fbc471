package mw

import (
	"container/list"
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Response cache defaults.
const (
	// DefaultCacheEntries is the most results [ResponseCache] keeps.
	DefaultCacheEntries = 256
	// DefaultCacheBytes bounds the bytes of the results it keeps.
	DefaultCacheBytes = 8 << 20
	// maxCacheTTL caps a ttlMs so that no duration overflows: a year.
	maxCacheTTL = 365 * 24 * time.Hour
)

// CacheOptions configures [ResponseCache].
type CacheOptions struct {
	// MaxEntries is the most results kept; 0 means [DefaultCacheEntries].
	MaxEntries int
	// MaxBytes bounds the bytes of the results kept (their JSON text); 0
	// means [DefaultCacheBytes]. A result larger than this is not kept.
	MaxBytes int
	// Now tells the time; nil means time.Now. Tests pass a fake clock.
	Now func() time.Time
	// Logger receives a debug line per answer from the cache; nil
	// discards.
	Logger *slog.Logger
}

// cacheable methods, each with a slot of its own for invalidation.
const (
	slotTools = iota
	slotPrompts
	slotResources
	slotTemplates
	slotRead
	numSlots
)

// cacheSlot returns the slot of a method whose results are cacheable
// ([mcp.IsCacheable]), or -1: the slot is the change notification that
// drops it (see invalidate). The sixth, server/discover, has none: it is
// only ever asked by a 2026-07-28 client, whose requests the stage leaves
// alone.
func cacheSlot(method string) int {
	if !mcp.IsCacheable(method) {
		return -1
	}
	switch method {
	case mcp.MethodToolsList:
		return slotTools
	case mcp.MethodPromptsList:
		return slotPrompts
	case mcp.MethodResourcesList:
		return slotResources
	case mcp.MethodResourceTemplates:
		return slotTemplates
	case mcp.MethodResourcesRead:
		return slotRead
	}
	return -1
}

// ResponseCache returns the stage that keeps the complete results of the
// cacheable methods of MCP 2026-07-28 for as long as the server says they
// stay fresh, and answers a repeated request from them without asking the
// server again. It sits inside [PaginationMerge], outside session recovery,
// in the relay's chain (see the package documentation): each page of a
// list is kept on its own, as the specification has pages cached (a stale
// page is fetched again alone, with its cursor), and a hit costs no
// session, retry or HTTP work.
//
// What is kept:
//
//   - The result of a request for tools/list, prompts/list,
//     resources/list, resources/templates/list or resources/read, when it
//     carries an integer ttlMs > 0 and its resultType is "complete" or
//     absent. A server that sends no ttlMs (every server before
//     2026-07-28), or 0, gets nothing kept. Errors and "input_required"
//     results are never kept, nor are the results of requests whose params
//     carry inputResponses or requestState (those requests are never
//     answered from the cache either).
//   - It is fresh while now < received + ttlMs ([CacheOptions.Now]); a
//     ttlMs over a year counts as a year.
//   - The key is the method and the request's params without _meta,
//     canonicalised: key order, whitespace and string escapes do not
//     count, every value does (a cursor, a uri, anything a server may
//     read); absent params count as {}. params that is not an object, or
//     an object with a key twice, is not cached.
//   - Both cacheScope values are kept, and a result without one: a relay
//     is one client with one authorization context (one server, one
//     token), which "private" allows; the cache lives as long as the
//     pipeline (one per session in serve), never across clients.
//   - At most MaxEntries results and MaxBytes bytes; the least recently
//     used go first.
//
// A hit is the kept result, byte for byte, under the id of the request it
// answers, handed client-bound inside Handle as the server's answer would
// be. A miss passes the request on untouched. A stale result is never
// served, not even when fetching it again fails.
//
// What invalidates, on the client-bound side (the notifications pass on
// untouched): notifications/tools/list_changed drops tools/list results,
// notifications/prompts/list_changed prompts/list results,
// notifications/resources/list_changed resources/list and
// resources/templates/list results, and notifications/resources/updated
// the resources/read results whose uri is the notified uri, begins with it
// or is its beginning (a notified uri may be a sub-resource of the one
// read; dropping too much costs a request, too little a stale read). An
// answer to a request sent before such a notification is not kept. An
// error answering a request with a cursor drops every result of that
// method (a cursor the server no longer knows means the pages kept are of
// another list).
//
// A request of a 2026-07-28 client ([ClassifyEra]) passes untouched, and
// server/discover, the sixth cacheable method, is always one: that client
// caches by itself, and a kept result carries no age, so answering it from
// here would stretch freshness up to twice ttlMs. Hence where the stage
// must sit: client-side of the stage that stamps _meta on a session-era
// client's requests (else every request looks modern), and server-side of
// any stage that takes ttlMs out of results or runs input_required rounds
// for the client (else it would not see ttlMs, or would keep a result the
// client's answers produced). A stage that needs a fresh list (one that
// re-lists after an error) sits server-side of it too.
func ResponseCache(o CacheOptions) Middleware {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultCacheEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultCacheBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return func(next Duplex) Duplex {
		c := &respCache{
			next:       next,
			now:        o.Now,
			log:        loggerOrDiscard(o.Logger),
			maxEntries: o.MaxEntries,
			maxBytes:   o.MaxBytes,
			entries:    make(map[string]*list.Element),
			lru:        list.New(),
			pending:    make(map[frame.ID]*pendingLookup),
		}
		return Duplex{ToServer: HandlerFunc(c.toServer), ToClient: HandlerFunc(c.toClient)}
	}
}

type respCache struct {
	next       Duplex
	now        func() time.Time
	log        *slog.Logger
	maxEntries int
	maxBytes   int

	mu      sync.Mutex
	entries map[string]*list.Element // key → element of lru, a *cacheEntry
	lru     *list.List               // most recently used first
	bytes   int
	// gen counts the invalidations of each slot: an answer is kept only if
	// none happened since its request was sent.
	gen     [numSlots]uint64
	pending map[frame.ID]*pendingLookup // requests in flight that missed
}

// cacheEntry is one kept result.
type cacheEntry struct {
	key      string
	slot     int
	uri      string // resources/read only
	msg      frame.Message
	received time.Time
	expires  time.Time
}

func (e *cacheEntry) size() int { return len(e.key) + e.msg.Len() }

// pendingLookup is a request that missed, waiting for its answer.
type pendingLookup struct {
	key    string
	slot   int
	uri    string
	cursor bool
	gen    uint64
}

func (c *respCache) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() != frame.Request {
		return c.next.ToServer.Handle(ctx, m)
	}
	slot := cacheSlot(m.Method())
	if slot < 0 || ClassifyEra(m) == EraStateless {
		return c.next.ToServer.Handle(ctx, m)
	}
	key, ok := cacheKey(m)
	if !ok {
		return c.next.ToServer.Handle(ctx, m)
	}
	id := m.ID()
	p := &pendingLookup{key: key, slot: slot, cursor: m.Get("params.cursor").Exists()}
	if slot == slotRead {
		p.uri = m.Get("params.uri").String()
	}
	hit, age, ok := c.lookup(id, p)
	if !ok {
		defer c.forget(id, p)
		return c.next.ToServer.Handle(ctx, m)
	}
	out, err := hit.WithID(id)
	if err != nil {
		return err
	}
	c.log.Debug("answered from the response cache", "method", m.Method(), "id", id.String(), "age", age)
	return c.next.ToClient.Handle(ctx, out)
}

// lookup returns the fresh result kept under p.key and its age. On a miss
// it registers p as the request id waits for, so that its answer can be
// kept.
func (c *respCache) lookup(id frame.ID, p *pendingLookup) (frame.Message, time.Duration, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[p.key]; ok {
		e := el.Value.(*cacheEntry)
		if now.Before(e.expires) {
			c.lru.MoveToFront(el)
			return e.msg, now.Sub(e.received), true
		}
		c.remove(el)
	}
	p.gen = c.gen[p.slot]
	c.pending[id] = p
	return frame.Message{}, 0, false
}

// forget drops p once its request is finished, answered or not.
func (c *respCache) forget(id frame.ID, p *pendingLookup) {
	c.mu.Lock()
	if c.pending[id] == p {
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

func (c *respCache) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Result, frame.Error:
		c.answered(m)
	case frame.Notification:
		c.invalidate(m)
	}
	return c.next.ToClient.Handle(ctx, m)
}

// answered keeps m if it answers a pending request with a result that may
// be kept.
func (c *respCache) answered(m frame.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[m.ID()]
	if !ok {
		return
	}
	delete(c.pending, m.ID())
	if m.Kind() == frame.Error {
		if p.cursor {
			c.drop(p.slot, "a cursor was refused", func(*cacheEntry) bool { return true })
		}
		return
	}
	ttl, ok := freshFor(m)
	if !ok || c.gen[p.slot] != p.gen {
		return
	}
	now := c.now()
	e := &cacheEntry{key: p.key, slot: p.slot, uri: p.uri, msg: m.WithHeaders(nil), received: now, expires: now.Add(ttl)}
	if e.size() > c.maxBytes {
		return
	}
	if old, ok := c.entries[p.key]; ok {
		c.remove(old)
	}
	c.entries[p.key] = c.lru.PushFront(e)
	c.bytes += e.size()
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

// freshFor returns how long the result m may be kept: its ttlMs, when it
// is a complete result with an integer ttlMs > 0.
func freshFor(m frame.Message) (time.Duration, bool) {
	if rt := m.Get("result.resultType"); rt.Exists() && (rt.Type != gjson.String || rt.Str != "complete") {
		return 0, false
	}
	ttl := m.Get("result.ttlMs")
	if ttl.Type != gjson.Number || ttl.Num < 1 || ttl.Num != math.Trunc(ttl.Num) {
		return 0, false
	}
	if ttl.Num >= float64(maxCacheTTL/time.Millisecond) {
		return maxCacheTTL, true
	}
	return time.Duration(ttl.Num) * time.Millisecond, true
}

// invalidate drops what the change notification m says is stale.
func (c *respCache) invalidate(m frame.Message) {
	all := func(*cacheEntry) bool { return true }
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Method() {
	case mcp.MethodToolsListChanged:
		c.drop(slotTools, m.Method(), all)
	case mcp.MethodPromptsListChanged:
		c.drop(slotPrompts, m.Method(), all)
	case mcp.MethodResourcesListChanged:
		c.drop(slotResources, m.Method(), all)
		c.drop(slotTemplates, m.Method(), all)
	case mcp.MethodResourceUpdated:
		uri := m.Get("params.uri").String()
		c.drop(slotRead, m.Method(), func(e *cacheEntry) bool { return uriRelated(e.uri, uri) })
	}
}

// uriRelated reports whether a kept read of uri kept may show the change
// notified for uri changed: one is a prefix of the other.
func uriRelated(kept, changed string) bool {
	return strings.HasPrefix(kept, changed) || strings.HasPrefix(changed, kept)
}

// drop removes the entries of slot that match, and makes the answers in
// flight for slot not kept. c.mu is held.
func (c *respCache) drop(slot int, why string, match func(*cacheEntry) bool) {
	c.gen[slot]++
	n := 0
	for el := c.lru.Front(); el != nil; {
		nextEl := el.Next()
		if e := el.Value.(*cacheEntry); e.slot == slot && match(e) {
			c.remove(el)
			n++
		}
		el = nextEl
	}
	if n > 0 {
		c.log.Debug("response cache invalidated", "by", why, "dropped", n)
	}
}

// remove drops one entry. c.mu is held.
func (c *respCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.entries, e.key)
	c.bytes -= e.size()
}

// cacheKey returns the key of request m: its method and its params without
// _meta, canonical. It fails for params that is not an object, for params
// with a key twice at any depth, and for a request that continues an
// input_required round (inputResponses, requestState), which is never
// cached.
func cacheKey(m frame.Message) (string, bool) {
	params := m.Params()
	b := make([]byte, 0, 64)
	b = append(b, m.Method()...)
	b = append(b, 0)
	if !params.Exists() {
		return string(append(b, "{}"...)), true // as params:{}
	}
	if !params.IsObject() || params.Get("inputResponses").Exists() || params.Get("requestState").Exists() {
		return "", false
	}
	b, ok := appendCanonical(b, params, true)
	return string(b), ok
}

// appendCanonical appends a canonical form of the JSON value v: object keys
// sorted, no whitespace, strings by their decoded text. top skips the
// object's _meta key.
func appendCanonical(b []byte, v gjson.Result, top bool) ([]byte, bool) {
	switch {
	case v.IsObject():
		type member struct {
			key string
			val gjson.Result
		}
		var ms []member
		v.ForEach(func(k, val gjson.Result) bool {
			if !top || k.Str != "_meta" {
				ms = append(ms, member{k.Str, val})
			}
			return true
		})
		slices.SortFunc(ms, func(x, y member) int { return strings.Compare(x.key, y.key) })
		b = append(b, '{')
		for i, mem := range ms {
			if i > 0 {
				if mem.key == ms[i-1].key {
					return b, false
				}
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, mem.key)
			b = append(b, ':')
			var ok bool
			if b, ok = appendCanonical(b, mem.val, false); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case v.IsArray():
		b = append(b, '[')
		ok := true
		first := true
		v.ForEach(func(_, val gjson.Result) bool {
			if !first {
				b = append(b, ',')
			}
			first = false
			b, ok = appendCanonical(b, val, false)
			return ok
		})
		return append(b, ']'), ok
	case v.Type == gjson.String:
		return strconv.AppendQuote(b, v.Str), true
	}
	return append(b, v.Raw...), true
}
