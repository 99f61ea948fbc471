package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ParamHeaderMode says when [ParamHeaders] mirrors tool arguments into
// Mcp-Param-* headers.
type ParamHeaderMode uint8

const (
	// ParamHeadersModern mirrors on a connection of MCP 2026-07-28 only
	// ([Conn.Era] is [EraStateless]). It is the zero value.
	ParamHeadersModern ParamHeaderMode = iota
	// ParamHeadersAlways mirrors on session-era servers too, which some
	// hosted servers want.
	ParamHeadersAlways
	// ParamHeadersOff never mirrors: the stage passes everything through.
	ParamHeadersOff
)

// String returns "modern", "always" or "off".
func (m ParamHeaderMode) String() string {
	switch m {
	case ParamHeadersModern:
		return "modern"
	case ParamHeadersAlways:
		return "always"
	case ParamHeadersOff:
		return "off"
	}
	return "ParamHeaderMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseParamHeaderMode parses "modern", "always" or "off".
func ParseParamHeaderMode(s string) (ParamHeaderMode, error) {
	for _, m := range []ParamHeaderMode{ParamHeadersModern, ParamHeadersAlways, ParamHeadersOff} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("invalid mode %q: want modern, always or off", s)
}

// ParamHeadersOptions configures [ParamHeaders].
type ParamHeadersOptions struct {
	// Mode says when the stage acts; the zero value is ParamHeadersModern.
	Mode ParamHeaderMode
	// MaxPages is the most pages of tools/list the stage fetches when it
	// lists the tools itself; 0 means [DefaultMaxPages].
	MaxPages int
	// Logger receives a warning per dropped tool and a line per self-heal;
	// nil discards.
	Logger *slog.Logger
}

// ParamHeaders returns the stage that mirrors tool arguments into HTTP
// headers, as MCP 2026-07-28 asks of an HTTP client: a tools/call argument
// whose property the tool's inputSchema annotates with x-mcp-header:"Name"
// is sent again as the header Mcp-Param-Name (digest §3.2–3.4). The
// headers ride on the message ([frame.Message.WithHeader]); the body is
// not touched.
//
// The stage acts on a message when Mode is ParamHeadersAlways, or when it
// is ParamHeadersModern and the connection in the message's context
// ([ConnOf]) speaks 2026-07-28; otherwise the message passes untouched
// (with ParamHeadersOff, always). Unlike the bridges, it acts on the lines
// of a 2026-07-28 client too: such a client on stdio cannot send HTTP
// headers, and the relay is the HTTP client that must check the tools. In
// the relay's chains it sits inside pagination merge, the response cache
// and the MRTR bridge, and outside _meta injection and the routing headers
// (see the package documentation): it sees each page of a list the server
// sends, each round of a call gets its headers, and its own requests get
// _meta and routing headers. It works as well client-side of pagination
// merge, where it sees lists whole and its own tools/list is merged.
//
// What it does:
//
//   - Learning. The answer to each tools/list request that passes on its
//     way to the client teaches the stage every tool's annotations
//     ([ToolParamHeaders]). An answer to a request without a cursor (a
//     whole list once merged, else page 1) replaces what was known; an
//     answer to a request with one adds to it.
//   - Dropping. A tool whose annotations break a rule is removed from that
//     answer (deleted from result.tools; every other byte is kept), with one
//     warning per tool naming it and the rule — not repeated while the
//     tool stays the same.
//   - Mirroring. A tools/call for a known tool gets one Mcp-Param-{Name}
//     header per annotation whose argument is present and not null: a
//     string as it is, true or false, an integer in decimal (see
//     headerText), encoded with [frame.EncodeHeaderValue]. A tool the
//     stage has not seen listed gets none.
//   - Forgetting. A notifications/tools/list_changed on its way to the
//     client, from any stream, empties what was learned; a tools/list
//     answer for a request sent before it does not teach.
//   - Self-heal. When the server refuses a tools/call with -32020
//     (HeaderMismatch: in an HTTP error's body, or as an error response),
//     the stage lists the tools itself under minted ids (following
//     nextCursor, at most MaxPages pages), learns the answer, and sends
//     the call once more, its headers made afresh, under a minted id. The
//     client sees only the final answer, under its own id; the -32020 it
//     sees only if the listing fails. A notifications/cancelled naming the
//     call is pointed at the request in flight for it.
func ParamHeaders(o ParamHeadersOptions) Middleware {
	if o.Mode == ParamHeadersOff {
		return Passthrough
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	return func(next Duplex) Duplex {
		p := &paramHeaders{
			next:     next,
			mode:     o.Mode,
			maxPages: o.MaxPages,
			log:      loggerOrDiscard(o.Logger),
			own:      NewRemap("param"),
			tools:    make(map[string][]ParamHeader),
			warned:   make(map[string]string),
			lists:    make(map[frame.ID]*listRequest),
			calls:    make(map[frame.ID]*pendingCall),
		}
		return Duplex{ToServer: HandlerFunc(p.toServer), ToClient: HandlerFunc(p.toClient)}
	}
}

// maxWarned bounds the tools whose warning is remembered.
const maxWarned = 4096

type paramHeaders struct {
	next     Duplex
	mode     ParamHeaderMode
	maxPages int
	log      *slog.Logger
	own      *Remap // the stage's own tools/list and retried calls

	mu     sync.Mutex
	gen    uint64                   // bumped when what was learned is forgotten
	tools  map[string][]ParamHeader // tool name → its annotations
	warned map[string]string        // tool name → the rule it was dropped for
	lists  map[frame.ID]*listRequest
	calls  map[frame.ID]*pendingCall
}

// listRequest is a client's tools/list in flight.
type listRequest struct {
	gen   uint64 // p.gen when it was sent
	whole bool   // it asked for the start of the list
}

// pendingCall is a client's tools/call in flight, first attempt.
type pendingCall struct {
	mismatch frame.Message // the -32020 error response it got, if one came client-bound
}

func (p *paramHeaders) active(ctx context.Context) bool {
	if p.mode == ParamHeadersAlways {
		return true
	}
	c := ConnOf(ctx)
	return c != nil && c.Era() == EraStateless
}

func (p *paramHeaders) toServer(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Notification:
		m = p.own.RetargetCancel(m)
	case frame.Request:
		if !p.active(ctx) {
			break
		}
		switch m.Method() {
		case "tools/call":
			return p.call(ctx, m)
		case "tools/list":
			return p.list(ctx, m)
		}
	}
	return p.next.ToServer.Handle(ctx, m)
}

func (p *paramHeaders) toClient(ctx context.Context, m frame.Message) error {
	if p.own.Capture(m) {
		return nil
	}
	switch m.Kind() {
	case frame.Notification:
		if m.Method() == "notifications/tools/list_changed" {
			p.forget()
		}
	case frame.Result:
		p.mu.Lock()
		lr := p.lists[m.ID()]
		p.mu.Unlock()
		if lr != nil {
			m = p.learn(m, lr)
		}
	case frame.Error:
		if code, _ := m.ErrorCode(); code == frame.CodeHeaderMismatch {
			p.mu.Lock()
			pc := p.calls[m.ID()]
			if pc != nil && pc.mismatch.Len() == 0 {
				pc.mismatch = m
			}
			p.mu.Unlock()
			if pc != nil {
				return nil // answered after the self-heal
			}
		}
	}
	return p.next.ToClient.Handle(ctx, m)
}

// forget empties what was learned.
func (p *paramHeaders) forget() {
	p.mu.Lock()
	p.gen++
	clear(p.tools)
	p.mu.Unlock()
}

// list passes a client's tools/list on, noting it so its answer teaches.
func (p *paramHeaders) list(ctx context.Context, m frame.Message) error {
	id := m.ID()
	lr := &listRequest{whole: mergeable(m)}
	p.mu.Lock()
	lr.gen = p.gen
	p.lists[id] = lr
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.lists[id] == lr {
			delete(p.lists, id)
		}
		p.mu.Unlock()
	}()
	return p.next.ToServer.Handle(ctx, m)
}

// learn learns the tools of answer, to the tools/list lr, and returns the
// answer without the tools whose annotations are invalid.
func (p *paramHeaders) learn(answer frame.Message, lr *listRequest) frame.Message {
	learned, invalid := p.read(answer.Get("result.tools"))
	p.mu.Lock()
	if lr.gen == p.gen {
		if lr.whole {
			clear(p.tools)
		}
		for name, hs := range learned {
			p.tools[name] = hs
		}
		for _, bad := range invalid {
			delete(p.tools, bad.name)
		}
	}
	p.mu.Unlock()
	out := answer
	for i := len(invalid) - 1; i >= 0; i-- {
		edited, err := out.Delete("result.tools." + strconv.Itoa(invalid[i].index))
		if err != nil {
			p.log.Warn("could not drop a tool with invalid x-mcp-header annotations", "tool", invalid[i].name, "err", err)
			continue
		}
		out = edited
	}
	return out
}

// invalidTool is a tool of a list whose annotations break a rule.
type invalidTool struct {
	index int
	name  string
}

// read reads the annotations of every tool in the array tools, warning
// once per invalid tool.
func (p *paramHeaders) read(tools gjson.Result) (map[string][]ParamHeader, []invalidTool) {
	learned := make(map[string][]ParamHeader)
	var invalid []invalidTool
	if !tools.IsArray() {
		return learned, nil
	}
	i := 0
	tools.ForEach(func(_, tool gjson.Result) bool {
		name := lastMember(tool, "name").String()
		hs, err := toolParamHeaders(lastMember(tool, "inputSchema"))
		if err != nil {
			invalid = append(invalid, invalidTool{index: i, name: name})
			p.warnOnce(name, err)
		} else {
			learned[name] = hs
		}
		i++
		return true
	})
	return learned, invalid
}

// warnOnce warns that tool is dropped for err, unless it already was for
// the same reason.
func (p *paramHeaders) warnOnce(tool string, err error) {
	rule := err.Error()
	p.mu.Lock()
	seen := p.warned[tool] == rule
	if !seen {
		if len(p.warned) >= maxWarned {
			clear(p.warned)
		}
		p.warned[tool] = rule
	}
	p.mu.Unlock()
	if !seen {
		p.log.Warn("dropping a tool from tools/list: its x-mcp-header annotations are invalid (MCP 2026-07-28)", "tool", tool, "reason", rule)
	}
}

// stamp returns call with an Mcp-Param-* header for each annotation of
// its tool whose argument has a value.
func (p *paramHeaders) stamp(call frame.Message) frame.Message {
	params := call.Params()
	name := lastMember(params, "name")
	if name.Type != gjson.String {
		return call
	}
	p.mu.Lock()
	hs := p.tools[name.Str]
	p.mu.Unlock()
	if len(hs) == 0 {
		return call
	}
	args := lastMember(params, "arguments")
	if !args.IsObject() {
		return call
	}
	var h http.Header
	for _, ph := range hs {
		text, ok := headerText(argumentAt(args, ph.Path))
		if !ok {
			continue
		}
		if h == nil {
			h = call.Header().Clone()
			if h == nil {
				h = make(http.Header, len(hs))
			}
		}
		h.Set(frame.HeaderParamPrefix+ph.Name, frame.EncodeHeaderValue(text))
	}
	if h == nil {
		return call
	}
	return call.WithHeaders(h)
}

// call sends a client's tools/call with its headers, and heals a -32020.
func (p *paramHeaders) call(ctx context.Context, m frame.Message) error {
	id := m.ID()
	pc := &pendingCall{}
	p.mu.Lock()
	p.calls[id] = pc
	p.mu.Unlock()
	err := p.next.ToServer.Handle(ctx, p.stamp(m))
	p.mu.Lock()
	if p.calls[id] == pc {
		delete(p.calls, id)
	}
	mismatch := pc.mismatch
	p.mu.Unlock()
	if mismatch.Len() == 0 && err != nil {
		r, ok := headerMismatch(err, id)
		if !ok {
			return err
		}
		mismatch = r
	}
	if mismatch.Len() == 0 {
		return nil
	}
	return p.heal(ctx, m, mismatch)
}

// headerMismatch returns the -32020 error response for id that err
// carries in an HTTP error's body, if it does: one naming id, no id (null)
// or an id a stage inside minted for the attempt (a retry under a new id),
// put under id.
func headerMismatch(err error, id frame.ID) (frame.Message, bool) {
	r, ok := bodyError(err)
	if !ok {
		return frame.Message{}, false
	}
	if code, _ := r.ErrorCode(); code != frame.CodeHeaderMismatch {
		return frame.Message{}, false
	}
	switch got := r.ID(); {
	case got == id:
		return r, true
	case got == "null" || got == "" || IsMinted(got):
		out, err := r.WithID(id)
		return out, err == nil
	}
	return frame.Message{}, false
}

// heal answers call, refused with mismatch: the tools listed again, the
// call sent once more.
func (p *paramHeaders) heal(ctx context.Context, call frame.Message, mismatch frame.Message) error {
	id := call.ID()
	tool := call.Get("params.name").String()
	p.log.Info("the server refused a tool call's Mcp-Param headers (-32020); listing the tools again and retrying once", "tool", tool, "id", id.String())
	if err := p.relist(ctx, id); err != nil {
		if ctx.Err() != nil {
			return err
		}
		p.log.Warn("could not list the tools again; the call keeps its -32020", "tool", tool, "id", id.String(), "err", err)
		return p.next.ToClient.Handle(ctx, mismatch)
	}
	answer, err := p.own.Call(ctx, p.next.ToServer, p.stamp(call), id)
	if err != nil {
		var ok bool
		if answer, ok = bodyError(err); !ok || ctx.Err() != nil {
			return err
		}
	}
	out, err := answer.WithID(id)
	if err != nil {
		return err
	}
	return p.next.ToClient.Handle(ctx, out)
}

// bodyError returns the JSON-RPC error response an HTTP error's body
// carries, whatever its id.
func bodyError(err error) (frame.Message, bool) {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return frame.Message{}, false
	}
	r, perr := frame.Parse(st.Body)
	if perr != nil || r.Kind() != frame.Error {
		return frame.Message{}, false
	}
	return r, true
}

// relistRequest is the stage's own tools/list; Remap gives it an id.
var relistRequest = frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`)

// relist lists the tools on behalf of the client request clientID and
// learns them, replacing what was known. It follows nextCursor (when no
// pagination merge inside has done so) up to maxPages pages.
func (p *paramHeaders) relist(ctx context.Context, clientID frame.ID) error {
	learned := make(map[string][]ParamHeader)
	seen := make(map[string]bool)
	req := relistRequest
	for page := 1; ; page++ {
		answer, err := p.own.Call(ctx, p.next.ToServer, req, clientID)
		if err != nil {
			return err
		}
		tools := answer.Get("result.tools")
		if answer.Kind() != frame.Result || !tools.IsArray() {
			if code, ok := answer.ErrorCode(); ok {
				return fmt.Errorf("tools/list answered error %d: %s", code, answer.Get("error.message").String())
			}
			return errors.New("tools/list answered without a tools array")
		}
		found, _ := p.read(tools)
		for name, hs := range found {
			learned[name] = hs
		}
		cursor := answer.Get("result.nextCursor")
		if cursor.Type != gjson.String || cursor.Str == "" || seen[cursor.Raw] || page >= p.maxPages {
			break
		}
		seen[cursor.Raw] = true
		if req, err = relistRequest.Set("params", []byte(`{"cursor":`+cursor.Raw+`}`)); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.gen++ // a client's list in flight now is older than this one: it must not teach
	clear(p.tools)
	for name, hs := range learned {
		p.tools[name] = hs
	}
	p.mu.Unlock()
	return nil
}
