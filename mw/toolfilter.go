package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultMaxToolLists is the most tools/list requests one [ToolFilter]
// stage keeps track of while their answers are awaited.
const DefaultMaxToolLists = 1024

// ToolFilterOptions configures [ToolFilter].
type ToolFilterOptions struct {
	// Allow lists the glob patterns ([MatchToolGlob]) of the tools let
	// through; empty lets every tool through that Deny does not name.
	Allow []string
	// Deny lists the glob patterns of the tools hidden and refused. Deny
	// wins over Allow.
	Deny []string
	// MaxLists is the most tools/list requests awaiting their answers at
	// once; 0 means [DefaultMaxToolLists]. One more is answered with
	// -32603 at once, never forwarded.
	MaxLists int
	// Logger receives a debug line per tool hidden and per call refused;
	// nil discards.
	Logger *slog.Logger
}

// MatchToolGlob reports whether the tool name matches pattern. The
// pattern is matched against the whole name, byte for byte, case
// sensitive: '*' matches any run of characters, empty and '/' and '.'
// included; '?' matches exactly one character (one UTF-8 rune); every
// other character, '[' and '\' included, matches only itself. So
// "github_*" matches "github_create_issue", "*" every name, and
// "files/?" "files/a" but not "files/ab".
func MatchToolGlob(pattern, name string) bool {
	// Greedy with one backtrack point, the last '*' seen: linear in
	// practice and never worse than len(pattern)*len(name).
	p, n := 0, 0
	star, starN := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				star, starN = p, n
				p++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				p++
				n += size
				continue
			default:
				if c == name[n] {
					p++
					n++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' take one more character, and try again.
		_, size := utf8.DecodeRuneInString(name[starN:])
		starN += size
		p, n = star+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// toolRules is the filter's verdict on names.
type toolRules struct {
	allow, deny []string
}

// refusal returns why name is filtered out, or "" when it is let through.
func (r toolRules) refusal(name string) string {
	for _, d := range r.deny {
		if MatchToolGlob(d, name) {
			return fmt.Sprintf("--deny-tool %q", d)
		}
	}
	if len(r.allow) == 0 {
		return ""
	}
	for _, a := range r.allow {
		if MatchToolGlob(a, name) {
			return ""
		}
	}
	return "no --allow-tool matches it"
}

// ToolFilter returns the stage that hides tools from the client and
// refuses calls to them, by name, with glob patterns ([MatchToolGlob]): a
// tool is filtered out when a Deny pattern matches its name, or when
// Allow is not empty and no Allow pattern matches it. It returns nil (no
// stage) when both lists are empty, and an error for an empty pattern.
//
//   - The result of every tools/list the client sent (each page, or the
//     merged list, as it leaves for the client) loses the elements of its
//     tools array that are objects whose name is a filtered-out string;
//     the array is spliced, every other byte kept. A result without such
//     elements is passed as it came. Its answers are told by the raw id of
//     the request, tracked from the moment it passes until its answer
//     does (or its Handle fails with anything but
//     [frame.ErrAnswerElsewhere]); at most MaxLists at once.
//   - A tools/call whose params.name is a filtered-out string (the name
//     the server would act on; serve's 2026-07-28 face has refused a
//     Mcp-Name header that says otherwise before) is answered with -32602
//     (the code MCP gives an unknown tool; HTTP 400 on a 2026-07-28 face)
//     whose message names the tool and the rule, and data
//     {"tool":NAME,"filter":RULE}; it is never forwarded.
//   - A batch (the relay passes them whole) that holds a tools/list or
//     such a tools/call is answered with a batch of -32600 errors, one per
//     request it holds, asking for them on their own; it is never
//     forwarded.
//   - Everything else passes untouched: notifications/tools/list_changed
//     and a listen's events included.
//
// It sits where requests carry the client's ids or ids unique on the
// pipeline, above the pagination merge and the response cache (see the
// package documentation), so that the lists cached are whole and every
// answer is filtered as it leaves.
func ToolFilter(o ToolFilterOptions) (Middleware, error) {
	if len(o.Allow) == 0 && len(o.Deny) == 0 {
		return nil, nil
	}
	for _, p := range append(append([]string(nil), o.Allow...), o.Deny...) {
		if p == "" {
			return nil, errors.New("a tool filter pattern is empty: give a tool name or a glob such as 'github_*'")
		}
	}
	if o.MaxLists <= 0 {
		o.MaxLists = DefaultMaxToolLists
	}
	rules := toolRules{allow: append([]string(nil), o.Allow...), deny: append([]string(nil), o.Deny...)}
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		f := &toolFilter{next: next, rules: rules, max: o.MaxLists, log: log, lists: make(map[frame.ID]int)}
		return Duplex{ToServer: HandlerFunc(f.toServer), ToClient: HandlerFunc(f.toClient)}
	}, nil
}

type toolFilter struct {
	next  Duplex
	rules toolRules
	max   int
	log   *slog.Logger

	mu    sync.Mutex
	lists map[frame.ID]int // tools/list requests awaiting their answers, by raw id
	n     int              // the sum of lists' counts
}

func (f *toolFilter) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() == frame.Batch {
		if refusal, ok := f.refuseBatch(m); ok {
			return f.next.ToClient.Handle(ctx, refusal)
		}
	}
	if m.Kind() != frame.Request {
		return f.next.ToServer.Handle(ctx, m)
	}
	switch m.Method() {
	case "tools/call":
		name := m.Get("params.name")
		if name.Type != gjson.String {
			break
		}
		if why := f.rules.refusal(name.String()); why != "" {
			f.log.Debug("tools/call refused by the tool filter", "id", m.ID().String(), "tool", name.String(), "filter", why)
			data := fmt.Appendf(nil, `{"tool":%s,"filter":%s}`, jsonString(name.String()), jsonString(why))
			msg := fmt.Sprintf("Unknown tool: %q is filtered out by the gateway (%s)", name.String(), why)
			return f.next.ToClient.Handle(ctx, frame.ErrorResponseData(m.ID(), frame.CodeInvalidParams, msg, data))
		}
	case "tools/list":
		id := m.ID()
		f.mu.Lock()
		if f.n >= f.max {
			f.mu.Unlock()
			f.log.Warn("tools/list refused: too many awaiting their answers", "id", id.String(), "max", f.max)
			return f.next.ToClient.Handle(ctx, frame.ErrorResponse(id, frame.CodeInternalError,
				fmt.Sprintf("too many tools/list requests awaiting their answers (%d); send it again once some are answered", f.max)))
		}
		f.lists[id]++
		f.n++
		f.mu.Unlock()
		err := f.next.ToServer.Handle(ctx, m)
		if err != nil && !errors.Is(err, frame.ErrAnswerElsewhere) {
			f.forget(id) // its answer, if any, is the edge's, not the server's
		}
		return err
	}
	return f.next.ToServer.Handle(ctx, m)
}

// refuseBatch returns the answer to a client's batch (the relay passes
// them whole) that holds a tools/list, or a tools/call of a filtered-out
// tool, and true: a batch of -32600 errors, one per request it holds,
// asking for those to be sent on their own. Other batches pass.
func (f *toolFilter) refuseBatch(m frame.Message) (frame.Message, bool) {
	refuse := false
	var ids []frame.ID
	for e := range m.Elements() {
		if e.Kind() != frame.Request {
			continue
		}
		ids = append(ids, e.ID())
		switch e.Method() {
		case "tools/list":
			refuse = true
		case "tools/call":
			if name := e.Get("params.name"); name.Type == gjson.String && f.rules.refusal(name.String()) != "" {
				refuse = true
			}
		}
	}
	if !refuse || len(ids) == 0 {
		return frame.Message{}, false
	}
	f.log.Debug("batch refused by the tool filter: it holds a tools/list or a call of a filtered-out tool", "requests", len(ids))
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, frame.ErrorResponse(id, frame.CodeInvalidRequest,
			"the gateway filters tools: send tools/list and tools/call on their own, not in a batch").Bytes()...)
	}
	b = append(b, ']')
	out, err := frame.ParseOwned(b)
	if err != nil { // cannot happen: an array of error responses
		return frame.ErrorResponse("null", frame.CodeInvalidRequest, "the gateway filters tools: send tools/list and tools/call on their own, not in a batch"), true
	}
	return out, true
}

// forget ends the wait for one answer to id; it reports whether there
// was one.
func (f *toolFilter) forget(id frame.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.lists[id]
	if !ok {
		return false
	}
	if c <= 1 {
		delete(f.lists, id)
	} else {
		f.lists[id] = c - 1
	}
	f.n--
	return true
}

func (f *toolFilter) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Result:
		if f.forget(m.ID()) {
			m = f.filterList(m)
		}
	case frame.Error:
		f.forget(m.ID())
	}
	return f.next.ToClient.Handle(ctx, m)
}

// filterList returns the tools/list result m without its filtered-out
// tools; m itself when there are none (or result.tools is not an array).
func (f *toolFilter) filterList(m frame.Message) frame.Message {
	arr := m.Get("result.tools")
	if !arr.IsArray() {
		return m
	}
	out, hidden := f.spliceTools(arr.Raw)
	if len(hidden) == 0 {
		return m
	}
	n, err := spliceMessage(m, arr, out)
	if err != nil { // cannot happen: out is arr.Raw less whole elements
		f.log.Warn("tools/list answer could not be filtered; answering with an error", "id", m.ID().String(), "err", err)
		return frame.ErrorResponse(m.ID(), frame.CodeInternalError, "the tool filter could not edit the server's tools/list result")
	}
	f.log.Debug("tools hidden by the tool filter", "id", m.ID().String(), "tools", hidden)
	return n
}

// spliceTools returns raw, a JSON array, without the elements that are
// objects whose name is a filtered-out string, and the names removed.
// The remaining elements, and the bytes between them, are kept.
func (f *toolFilter) spliceTools(raw string) ([]byte, []string) {
	type span struct {
		start, end int
		drop       bool
	}
	var (
		elems  []span
		hidden []string
	)
	gjson.Parse(raw).ForEach(func(_, v gjson.Result) bool {
		s := span{start: v.Index, end: v.Index + len(v.Raw)}
		if v.IsObject() {
			if name := v.Get("name"); name.Type == gjson.String {
				if f.rules.refusal(name.String()) != "" {
					s.drop = true
					hidden = append(hidden, name.String())
				}
			}
		}
		elems = append(elems, s)
		return true
	})
	if len(hidden) == 0 {
		return nil, nil
	}
	for _, e := range elems { // gjson gives offsets into raw; make sure
		if e.start < 0 || e.end > len(raw) || e.start >= e.end {
			return []byte("[]"), hidden // unreachable: hide everything rather than leak
		}
	}
	lastKept := -1
	for i, e := range elems {
		if !e.drop {
			lastKept = i
		}
	}
	var b strings.Builder
	b.Grow(len(raw))
	from := 0 // raw[from:] is not written yet
	for i, e := range elems {
		if !e.drop {
			continue
		}
		switch {
		case i < lastKept: // drop it and what separates it from the next element
			b.WriteString(raw[from:e.start])
			from = elems[i+1].start
		case lastKept >= 0: // a trailing run: drop from the last kept element's end
			b.WriteString(raw[from:elems[lastKept].end])
			from = elems[len(elems)-1].end
		default: // every element dropped
			b.WriteString(raw[from:elems[0].start])
			from = elems[len(elems)-1].end
		}
		if i > lastKept {
			break
		}
	}
	b.WriteString(raw[from:])
	return []byte(b.String()), hidden
}

// spliceMessage returns m with the bytes of v, a value read from m,
// replaced by raw; every other byte is kept.
func spliceMessage(m frame.Message, v gjson.Result, raw []byte) (frame.Message, error) {
	b := m.Bytes()
	if v.Index <= 0 || v.Index+len(v.Raw) > len(b) || string(b[v.Index:v.Index+len(v.Raw)]) != v.Raw {
		return m.Set("result.tools", raw) // no offset to splice at: sjson's edit
	}
	out := make([]byte, 0, len(b)-len(v.Raw)+len(raw))
	out = append(out, b[:v.Index]...)
	out = append(out, raw...)
	out = append(out, b[v.Index+len(v.Raw):]...)
	n, err := frame.ParseOwned(out)
	if err != nil {
		return frame.Message{}, err
	}
	return n.WithHeaders(m.Header()), nil
}
