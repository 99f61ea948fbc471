package mw

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// maxListedTools bounds the tools/list requests [FilterTools] remembers
// while their answers are due; past it the oldest is forgotten, and its
// answer, if it ever comes, is filtered all the same (see FilterTools).
const maxListedTools = 4096

// ToolFilterOptions configures [FilterTools].
type ToolFilterOptions struct {
	// Allow, when not empty, lists the globs of the only tools offered:
	// a tool whose name matches none of them is filtered out.
	Allow []string
	// Deny lists the globs of tools filtered out, whatever Allow says.
	Deny []string
	// Logger receives a line for each call refused; nil discards.
	Logger *slog.Logger
}

// ToolGlobMatch reports whether the tool name matches glob: '*' matches
// any run of characters, '/' and '.' included, possibly empty; '?' one
// character; every other character itself, case counting. It takes time
// proportional to len(glob)·len(name) at most.
func ToolGlobMatch(glob, name string) bool {
	g, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		if g < len(glob) {
			switch glob[g] {
			case '*':
				star, mark = g, n
				g++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				g++
				n += size
				continue
			default:
				if glob[g] == name[n] {
					g++
					n++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' take one more character and try again.
		_, size := utf8.DecodeRuneInString(name[mark:])
		mark += size
		g, n = star+1, mark
	}
	for g < len(glob) && glob[g] == '*' {
		g++
	}
	return g == len(glob)
}

// ToolFilter decides which tools a client is offered.
type ToolFilter struct {
	allow, deny []string
}

// NewToolFilter returns the filter of allow and deny globs (see
// [ToolFilterOptions]).
func NewToolFilter(allow, deny []string) *ToolFilter {
	return &ToolFilter{allow: allow, deny: deny}
}

// Why returns "" when the tool name is offered, else why it is not: the
// flag and glob that filter it out.
func (f *ToolFilter) Why(name string) string {
	for _, g := range f.deny {
		if ToolGlobMatch(g, name) {
			return "--deny-tool " + strconv.Quote(g) + " filters it out"
		}
	}
	if len(f.allow) == 0 {
		return ""
	}
	for _, g := range f.allow {
		if ToolGlobMatch(g, name) {
			return ""
		}
	}
	return "no --allow-tool glob names it"
}

// FilterTools returns the stage that keeps the tools the filter leaves
// out out of a client's sight, in either era and either pipeline. It sits
// nearest the client, outside any cache or pagination merge (see the
// package documentation), so that every answer a client gets passes it.
//
// Server-bound, a tools/call naming a filtered tool (params.name) is
// answered here with -32602 "tool NAME is not available: …" naming the
// flag and glob, and never passed on; a tools/list request is remembered
// by its raw id (the latest maxListedTools), and passes.
//
// Client-bound, the answer to a remembered tools/list loses the elements
// of result.tools whose name is filtered (an element without a string
// name is filtered too: it names no tool a client could be allowed to
// call); every other byte of it, and every other message — a
// notifications/tools/list_changed, a listen's frames — passes unchanged.
// A result.tools that is not an array is left as it is.
func FilterTools(o ToolFilterOptions) Middleware {
	f := NewToolFilter(o.Allow, o.Deny)
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		st := &toolFilter{f: f, log: log, next: next, lists: make(map[frame.ID]struct{})}
		return Duplex{ToServer: HandlerFunc(st.toServer), ToClient: HandlerFunc(st.toClient)}
	}
}

type toolFilter struct {
	f    *ToolFilter
	log  *slog.Logger
	next Duplex

	mu    sync.Mutex
	lists map[frame.ID]struct{} // tools/list requests whose answer is due
	order []frame.ID            // the same, oldest first
}

func (t *toolFilter) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() == frame.Request {
		switch m.Method() {
		case mcp.MethodToolsCall:
			name := m.Get("params.name")
			if !name.Exists() { // no name: the server says what is wrong
				break
			}
			if why := t.f.Why(name.String()); why != "" {
				t.log.Info("refused a call to a filtered tool", "tool", name.String(), "why", why)
				return t.next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInvalidParams,
					fmt.Sprintf("tool %s is not available: %s", strconv.Quote(name.String()), why)))
			}
		case mcp.MethodToolsList:
			t.remember(m.ID())
		}
	}
	return t.next.ToServer.Handle(ctx, m)
}

// remember notes that the answer to the tools/list id is due.
func (t *toolFilter) remember(id frame.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.lists[id]; ok {
		return
	}
	if len(t.order) >= maxListedTools {
		delete(t.lists, t.order[0])
		t.order = t.order[1:]
	}
	t.lists[id] = struct{}{}
	t.order = append(t.order, id)
}

// answered reports whether m answers a remembered tools/list, and forgets
// it.
func (t *toolFilter) answered(id frame.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.lists[id]; !ok {
		return false
	}
	delete(t.lists, id)
	for i, o := range t.order {
		if o == id {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
	return true
}

func (t *toolFilter) toClient(ctx context.Context, m frame.Message) error {
	if m.Kind().IsResponse() && t.answered(m.ID()) && m.Kind() == frame.Result {
		m = t.f.filterList(m)
	}
	return t.next.ToClient.Handle(ctx, m)
}

// filterList returns the tools/list result m without the tools the
// filter leaves out; m itself when it leaves none out.
func (f *ToolFilter) filterList(m frame.Message) frame.Message {
	tools := m.Get("result.tools")
	if !tools.IsArray() {
		return m
	}
	var kept []byte
	dropped := false
	first := true
	tools.ForEach(func(_, tool gjson.Result) bool {
		name := tool.Get("name")
		if name.Type != gjson.String || f.Why(name.String()) != "" {
			dropped = true
			return true
		}
		if first {
			kept = append(kept, '[')
			first = false
		} else {
			kept = append(kept, ',')
		}
		kept = append(kept, tool.Raw...)
		return true
	})
	if !dropped {
		return m
	}
	if first {
		kept = append(kept, '[')
	}
	kept = append(kept, ']')
	out, err := m.Set("result.tools", kept)
	if err != nil {
		return frame.ErrorResponse(m.ID(), frame.CodeInternalError, "the gateway could not filter the server's tools/list")
	}
	return out
}
