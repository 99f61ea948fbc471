package mw

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)} }

// resultServer answers each request with result(m), as a raw result
// object, or with the whole response when it starts with {"jsonrpc".
func resultServer(result func(m frame.Message) string) *fakeServer {
	return &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Kind() != frame.Request {
			return nil, nil
		}
		r := result(m)
		if strings.HasPrefix(r, `{"jsonrpc"`) {
			resp, err := frame.MustParse(r).WithID(m.ID())
			return []frame.Message{resp}, err
		}
		return []frame.Message{answerWith(m, r)}, nil
	}}
}

// constServer answers every request with the same result.
func constServer(result string) *fakeServer {
	return resultServer(func(frame.Message) string { return result })
}

func cacheStage(clock *fakeClock) Middleware {
	return ResponseCache(CacheOptions{Now: clock.Now})
}

func send(t *testing.T, h Handler, line string) {
	t.Helper()
	if err := h.Handle(t.Context(), frame.MustParse(line)); err != nil {
		t.Fatalf("Handle(%s): %v", line, err)
	}
}

func TestCacheHitAnswersLocally(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	const result = `{"tools":[{"name":"a","n":1.50}], "ttlMs":60000,"cacheScope":"public","resultType":"complete"}`
	srv := constServer(result)
	toServer, client := pipeline(srv, cacheStage(clock))

	send(t, toServer, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":1,"b":{"y":2,"x":"\u00e9"}}}`)
	clock.Advance(59 * time.Second)
	// Key order, whitespace, string escapes and _meta do not count.
	send(t, toServer, `{"jsonrpc":"2.0","id":"two","method":"tools/list","params":{ "b" : {"x":"é","y":2}, "a":1, "_meta":{"progressToken":7}}}`)

	is.Equal(len(srv.sent.all()), 1) // the second was answered here
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":` + result + `}`,
		`{"jsonrpc":"2.0","id":"two","result":` + result + `}`, // byte for byte, under its own id
	})
}

func TestCacheEveryCacheableMethod(t *testing.T) {
	for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"} {
		t.Run(method, func(t *testing.T) {
			is := is.New(t)
			srv := constServer(`{"ttlMs":1000,"cacheScope":"private","resultType":"complete"}`)
			toServer, client := pipeline(srv, cacheStage(newFakeClock()))
			line := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"uri":"file:///a"}}`
			send(t, toServer, line)
			send(t, toServer, line)
			is.Equal(len(srv.sent.all()), 1)
			is.Equal(len(client.all()), 2)
		})
	}
	t.Run("tools/call", func(t *testing.T) {
		is := is.New(t)
		srv := constServer(`{"content":[],"ttlMs":1000,"cacheScope":"public"}`)
		toServer, _ := pipeline(srv, cacheStage(newFakeClock()))
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
		send(t, toServer, line)
		send(t, toServer, line)
		is.Equal(len(srv.sent.all()), 2) // not a cacheable method
	})
}

// Fresh while now < received + ttlMs, then fetched again.
func TestCacheExpiry(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	srv := constServer(`{"tools":[],"ttlMs":1500}`)
	toServer, _ := pipeline(srv, cacheStage(clock))
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

	send(t, toServer, line)
	clock.Advance(1499 * time.Millisecond)
	send(t, toServer, line)
	is.Equal(len(srv.sent.all()), 1) // still fresh
	clock.Advance(time.Millisecond)
	send(t, toServer, line)
	is.Equal(len(srv.sent.all()), 2) // stale at received + ttlMs
	clock.Advance(time.Second)
	send(t, toServer, line)
	is.Equal(len(srv.sent.all()), 2) // the new answer is fresh again
}

func TestCacheNeedsAPositiveTTL(t *testing.T) {
	for _, result := range []string{
		`{"tools":[]}`,
		`{"tools":[],"ttlMs":0,"cacheScope":"public"}`,
		`{"tools":[],"ttlMs":-5}`,
		`{"tools":[],"ttlMs":1.5}`,
		`{"tools":[],"ttlMs":"60000"}`,
		`{"tools":[],"ttlMs":null}`,
		`{"tools":[],"ttlMs":60000,"resultType":"input_required"}`,
		`{"tools":[],"ttlMs":60000,"resultType":"partial"}`,
		`{"tools":[],"ttlMs":60000,"resultType":null}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x","data":{"ttlMs":60000}}}`,
	} {
		t.Run(result, func(t *testing.T) {
			is := is.New(t)
			srv := constServer(result)
			toServer, client := pipeline(srv, cacheStage(newFakeClock()))
			line := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			send(t, toServer, line)
			send(t, toServer, line)
			is.Equal(len(srv.sent.all()), 2) // nothing kept
			is.Equal(len(client.all()), 2)
		})
	}
}

// A huge ttlMs is capped, not overflowed into the past.
func TestCacheHugeTTL(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	srv := constServer(`{"tools":[],"ttlMs":1e300}`)
	toServer, _ := pipeline(srv, cacheStage(clock))
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	send(t, toServer, line)
	clock.Advance(300 * 24 * time.Hour)
	send(t, toServer, line)
	is.Equal(len(srv.sent.all()), 1)
	clock.Advance(66 * 24 * time.Hour)
	send(t, toServer, line)
	is.Equal(len(srv.sent.all()), 2)
}

// An input_required round is never cached, nor is the retry that carries
// the client's answers, even when its result is complete.
func TestCacheNeverInputRequired(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	srv := resultServer(func(m frame.Message) string {
		if m.Get("params.inputResponses").Exists() || m.Get("params.requestState").Exists() {
			return `{"contents":[{"uri":"file:///a","text":"secret"}],"ttlMs":60000,"resultType":"complete"}`
		}
		return `{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"requestState":"s","ttlMs":60000}`
	})
	toServer, client := pipeline(srv, cacheStage(clock))
	first := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`
	retry := `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a","inputResponses":{"k":{"action":"accept"}},"requestState":"s"}}`
	stateOnly := `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///a","requestState":"s"}}`
	for _, line := range []string{first, retry, retry, stateOnly, stateOnly, first} {
		send(t, toServer, line)
	}
	is.Equal(len(srv.sent.all()), 6) // every one asked the server
	is.Equal(client.all()[5].Get("result.resultType").Str, "input_required")
}

func TestCacheKeyDistinguishes(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	srv := resultServer(func(m frame.Message) string {
		return `{"contents":[],"ttlMs":60000,"echo":` + m.Get("params").Raw + `}`
	})
	toServer, client := pipeline(srv, cacheStage(clock))
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{"cursor":"c2"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{"cursor":"c3"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///b"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///a","x":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///a","x":1.0}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///a","x":[1,2]}}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///a","x":[2,1]}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"file:///a","x":{"_meta":1}}}`,
	}
	for _, l := range lines {
		send(t, toServer, l)
	}
	is.Equal(len(srv.sent.all()), len(lines)) // all different
	// Asked again, each gets its own answer back.
	for _, l := range lines {
		send(t, toServer, l)
	}
	is.Equal(len(srv.sent.all()), len(lines))
	got := client.all()
	for i := range lines {
		is.Equal(got[len(lines)+i].Get("result").Raw, got[i].Get("result").Raw)
	}
	// The same params, other spellings, hit.
	send(t, toServer, `{"jsonrpc":"2.0","id":11,"method":"resources/list","params":{}}`)
	send(t, toServer, `{"jsonrpc":"2.0","id":12,"method":"resources/list","params":{"_meta":{"progressToken":1}}}`)
	send(t, toServer, `{"jsonrpc":"2.0","id":13,"method":"resources/read","params":{ "x" : [ 1 , 2 ] , "uri" : "file:\/\/\/a" }}`)
	is.Equal(len(srv.sent.all()), len(lines))
}

func TestCacheKey(t *testing.T) {
	for _, tt := range []struct {
		line, key string
		ok        bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "tools/list\x00{}", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, "tools/list\x00{}", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"a":1}}}`, "tools/list\x00{}", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c","a":{"z":null,"b":true}}}`, "tools/list\x00{\"a\":{\"b\":true,\"z\":null},\"cursor\":\"c\"}", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c","cursor":"d"}}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":[{"k":1,"k":2}]}}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"u","requestState":"s"}}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"u","inputResponses":{}}}`, "", false},
	} {
		t.Run(tt.line, func(t *testing.T) {
			is := is.New(t)
			key, ok := cacheKey(frame.MustParse(tt.line))
			is.Equal(ok, tt.ok)
			if ok {
				is.Equal(key, tt.key)
			}
		})
	}
}

func TestCacheInvalidation(t *testing.T) {
	all := []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
	for _, tt := range []struct {
		notification string
		dropped      []string
	}{
		{"notifications/tools/list_changed", []string{"tools/list"}},
		{"notifications/prompts/list_changed", []string{"prompts/list"}},
		{"notifications/resources/list_changed", []string{"resources/list", "resources/templates/list"}},
		{"notifications/message", nil},
		{"notifications/roots/list_changed", nil},
	} {
		t.Run(tt.notification, func(t *testing.T) {
			is := is.New(t)
			srv := constServer(`{"ttlMs":60000}`)
			toServer, client := pipeline(srv, cacheStage(newFakeClock()))
			for i, method := range all {
				send(t, toServer, `{"jsonrpc":"2.0","id":`+decimal(i)+`,"method":"`+method+`"}`)
			}
			note := `{"jsonrpc":"2.0","method":"` + tt.notification + `","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`
			is.NoErr(srv.up.Handle(t.Context(), frame.MustParse(note)))
			is.Equal(client.all()[len(all)].String(), note) // passed on untouched
			for i, method := range all {
				n := len(srv.sent.all())
				send(t, toServer, `{"jsonrpc":"2.0","id":`+decimal(10+i)+`,"method":"`+method+`"}`)
				is.Equal(len(srv.sent.all())-n == 1, slicesContains(tt.dropped, method)) // fetched again only if dropped
			}
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestCacheResourcesUpdated(t *testing.T) {
	is := is.New(t)
	srv := resultServer(func(m frame.Message) string {
		return `{"contents":[{"uri":` + m.Get("params.uri").Raw + `}],"ttlMs":60000}`
	})
	toServer, client := pipeline(srv, cacheStage(newFakeClock()))
	uris := []string{"file:///dir", "file:///dir/a", "file:///dir/a/b", "file:///other", "mem://x"}
	read := func(id int, uri string) {
		send(t, toServer, `{"jsonrpc":"2.0","id":`+decimal(id)+`,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
	}
	for i, u := range uris {
		read(i, u)
	}
	send(t, toServer, `{"jsonrpc":"2.0","id":99,"method":"resources/list"}`)
	is.NoErr(srv.up.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///dir/a"}}`)))
	is.Equal(client.all()[len(uris)+1].Method(), "notifications/resources/updated")

	n := len(srv.sent.all())
	for i, u := range uris {
		read(10+i, u)
	}
	send(t, toServer, `{"jsonrpc":"2.0","id":98,"method":"resources/list"}`)
	var refetched []string
	for _, m := range srv.sent.all()[n:] {
		refetched = append(refetched, m.Get("params.uri").Str)
	}
	// The uri itself, what lies under it and what contains it; not the
	// others, nor the list.
	is.Equal(refetched, []string{"file:///dir", "file:///dir/a", "file:///dir/a/b"})
}

// An answer to a request sent before a list_changed is not kept: it may
// be the list from before the change.
func TestCacheInvalidationInFlight(t *testing.T) {
	is := is.New(t)
	var n int
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		n++
		out := []frame.Message{answerWith(m, `{"tools":[],"ttlMs":60000}`)}
		if n == 1 {
			note := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			out = append([]frame.Message{note}, out...)
		}
		return out, nil
	}}
	toServer, _ := pipeline(srv, cacheStage(newFakeClock()))
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	send(t, toServer, line) // list_changed arrives before the answer
	send(t, toServer, line) // so this one asks again, and is kept
	send(t, toServer, line)
	is.Equal(len(srv.sent.all()), 2)
}

// A cursor the server refuses drops every kept page of that list.
func TestCacheCursorErrorDropsTheList(t *testing.T) {
	is := is.New(t)
	srv := resultServer(func(m frame.Message) string {
		if m.Get("params.cursor").Str == "bad" {
			return `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"invalid cursor"}}`
		}
		return `{"prompts":[],"ttlMs":60000,"nextCursor":"c2"}`
	})
	toServer, _ := pipeline(srv, cacheStage(newFakeClock()))
	page1 := `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`
	send(t, toServer, page1)
	send(t, toServer, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	send(t, toServer, `{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{"cursor":"bad"}}`)
	n := len(srv.sent.all())
	send(t, toServer, page1)
	send(t, toServer, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	is.Equal(len(srv.sent.all()), n+1) // prompts/list again, tools/list still kept
}

func TestCacheBounds(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		is := is.New(t)
		srv := constServer(`{"contents":[],"ttlMs":60000}`)
		toServer, _ := pipeline(srv, ResponseCache(CacheOptions{MaxEntries: 2, Now: newFakeClock().Now}))
		read := func(uri string) {
			send(t, toServer, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		}
		read("a")
		read("b")
		read("a") // hit: a is now the most recently used
		read("c") // evicts b
		n := len(srv.sent.all())
		is.Equal(n, 3)
		read("a")
		read("c")
		is.Equal(len(srv.sent.all()), n) // kept
		read("b")
		is.Equal(len(srv.sent.all()), n+1) // evicted
	})
	t.Run("bytes", func(t *testing.T) {
		is := is.New(t)
		srv := resultServer(func(m frame.Message) string {
			return `{"contents":[{"text":"` + strings.Repeat("x", 100) + `"}],"ttlMs":60000}`
		})
		// One answer is about 150 bytes: two fit, three do not.
		toServer, _ := pipeline(srv, ResponseCache(CacheOptions{MaxBytes: 400, Now: newFakeClock().Now}))
		read := func(uri string) {
			send(t, toServer, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		}
		read("a")
		read("b")
		read("c") // evicts a
		n := len(srv.sent.all())
		read("b")
		read("c")
		is.Equal(len(srv.sent.all()), n)
		read("a")
		is.Equal(len(srv.sent.all()), n+1)
	})
	t.Run("too big", func(t *testing.T) {
		is := is.New(t)
		srv := constServer(`{"contents":[{"text":"` + strings.Repeat("x", 500) + `"}],"ttlMs":60000}`)
		toServer, _ := pipeline(srv, ResponseCache(CacheOptions{MaxBytes: 400, Now: newFakeClock().Now}))
		line := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a"}}`
		send(t, toServer, line)
		send(t, toServer, line)
		is.Equal(len(srv.sent.all()), 2) // never kept
	})
}

// A 2026-07-28 client caches by itself: its requests pass untouched.
func TestCacheLeavesModernClientsAlone(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
	} {
		t.Run(line, func(t *testing.T) {
			is := is.New(t)
			srv := constServer(`{"tools":[],"supportedVersions":["2026-07-28"],"ttlMs":60000,"cacheScope":"public","resultType":"complete"}`)
			toServer, _ := pipeline(srv, cacheStage(newFakeClock()))
			send(t, toServer, line)
			send(t, toServer, line)
			is.Equal(srv.sent.lines(), []string{line, line})
		})
	}
}

// Requests and notifications the cache does not own pass byte for byte.
func TestCachePassesTheRestThrough(t *testing.T) {
	is := is.New(t)
	srv := constServer(`{"ttlMs":60000}`)
	toServer, client := pipeline(srv, cacheStage(newFakeClock()))
	lines := []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"a":{"b":{"c":1,"c":2}}}}`, // a repeated name deep enough to be allowed
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	}
	for _, l := range lines {
		send(t, toServer, l)
	}
	is.Equal(srv.sent.lines(), lines)
	is.Equal(len(client.all()), 2)
}

// Behind PaginationMerge each page is kept on its own: a repeated list is
// merged from kept pages without a request, and a page that went stale is
// fetched again alone, with its cursor.
func TestCacheUnderPagination(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	srv := pagedServer(map[string]string{
		"":   `{"tools":[{"name":"a"}],"nextCursor":"c2","ttlMs":60000}`,
		"c2": `{"tools":[{"name":"b"}],"ttlMs":1000}`,
	})
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}), cacheStage(clock))
	send(t, toServer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	send(t, toServer, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	is.Equal(len(srv.sent.all()), 2) // two pages, once
	clock.Advance(time.Second)
	send(t, toServer, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	sent := srv.sent.all()
	is.Equal(len(sent), 3)
	is.Equal(sent[2].Get("params.cursor").Str, "c2") // page 2 only
	want := `{"tools":[{"name":"a"},{"name":"b"}],"ttlMs":60000}`
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":` + want + `}`,
		`{"jsonrpc":"2.0","id":2,"result":` + want + `}`,
		`{"jsonrpc":"2.0","id":3,"result":` + want + `}`,
	})
}

// Concurrent requests, hits, misses and invalidations keep the cache
// consistent (run with -race).
func TestCacheConcurrent(t *testing.T) {
	srv := constServer(`{"tools":[],"ttlMs":60000}`)
	toServer, _ := pipeline(srv, ResponseCache(CacheOptions{MaxEntries: 4, Now: newFakeClock().Now}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				id := decimal(g*1000 + i)
				line := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"cursor":"` + decimal(i%6) + `"}}`
				if err := toServer.Handle(t.Context(), frame.MustParse(line)); err != nil {
					t.Error(err)
				}
				if i%10 == 0 {
					_ = srv.up.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
				}
			}
		})
	}
	wg.Wait()
}

// The cache has a slot for every cacheable method but server/discover
// (frame/mcp says which are), each its own.
func TestCacheSlotsFollowVocabulary(t *testing.T) {
	is := is.New(t)
	seen := map[int]bool{}
	for _, method := range []string{mcp.MethodDiscover, mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList,
		mcp.MethodResourceTemplates, mcp.MethodResourcesRead, mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodComplete, "x/y"} {
		slot := cacheSlot(method)
		switch {
		case method == mcp.MethodDiscover || !mcp.IsCacheable(method):
			is.Equal(slot, -1) // no slot for method
		default:
			is.True(slot >= 0 && slot < numSlots && !seen[slot]) // a slot of its own for method
			seen[slot] = true
		}
	}
	is.Equal(len(seen), numSlots)
}
