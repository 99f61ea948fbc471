package mw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultParamListTimeout bounds how long [CheckParamHeaders] waits for
// the tools/list it sends.
const DefaultParamListTimeout = 10 * time.Second

// ParamCheckOptions configures [CheckParamHeaders].
type ParamCheckOptions struct {
	// MaxPages is the most pages of tools/list the stage fetches; 0 means
	// [DefaultMaxPages].
	MaxPages int
	// ListTimeout bounds the wait for the stage's own tools/list, all
	// pages; 0 (or less) means [DefaultParamListTimeout].
	ListTimeout time.Duration
	// Rand is read once per server for the random part of the ids of the
	// stage's own tools/list (see [IDMinter.Randomize]); nil means
	// crypto/rand.
	Rand io.Reader
	// Logger receives a debug line per call let through unchecked and per
	// refusal; nil discards.
	Logger *slog.Logger
}

// CheckParamHeaders returns the stage of serve's 2026-07-28 face that
// holds a tools/call's Mcp-Param-* headers to its body, as MCP asks of a
// server (digest §3.2–3.4): the rung of the validation ladder that needs
// the child's tools. It is a per-child stage, in the child's entry chain
// right below the router (see the package documentation): it sees
// requests under minted ids, and refuses by returning [Refuse]'s error.
//
// For a tools/call whose tool the child lists, each x-mcp-header
// annotation of the tool's inputSchema ([ToolParamHeaders]) is checked
// against params.arguments:
//
//   - an argument present and not null (nor an object or an array, which
//     the relay mirrors to no header either) needs its header
//     Mcp-Param-{Name}, the name matched in any case, sent once, whose
//     value, decoded ([frame.DecodeHeaderValue]), says the same: a string
//     exactly, a boolean as true or false, a number as a JSON number equal
//     to it (42 and 42.0 agree);
//   - an argument absent or null must come without its header.
//
// A header missing, repeated, different, not valid =?base64?…?=, or sent
// for an absent argument gets 400 with -32020 under the call's id. Headers
// Mcp-Param-* that name no annotation of the tool are not looked at
// (intermediaries may add their own). A call for a tool the child does not
// list, or whose annotations break a rule, passes unchecked.
//
// The stage learns the tools by listing them itself: a tools/list sent
// down the chain under a minted id, as a 2026-07-28 request (params._meta
// with the call's protocolVersion and an empty clientCapabilities, which
// a session-era child's stages strip), following nextCursor for at most
// MaxPages pages; the answers never go further up. What it learns it
// keeps until a notifications/tools/list_changed passes it on its way to
// the client. Calls that find nothing known while a listing is under way
// wait for that one (one listing at a time). When the listing fails — an
// error, no tools array, no answer within ListTimeout, the child gone —
// the stage logs it at debug level and lets the call through unchecked,
// and the next call lists again: a tools/list that does not work must not
// stop every call.
//
// The connection in the message's context ([ConnOf]) is the child's: when
// it closes, a listing under way ends and what was learned is dropped.
// Everything but tools/call passes untouched, both ways, but for the
// answers to the stage's own tools/list.
func CheckParamHeaders(o ParamCheckOptions) Middleware {
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.ListTimeout <= 0 {
		o.ListTimeout = DefaultParamListTimeout
	}
	return func(next Duplex) Duplex {
		p := &paramCheck{
			next:    next,
			o:       o,
			log:     loggerOrDiscard(o.Logger),
			waiting: make(map[frame.ID]chan frame.Message),
			dead:    make(chan struct{}),
		}
		if err := p.ids.Randomize(o.Rand); err != nil {
			p.log.Error("the ids minted for this server are a plain counter", "err", err)
		}
		return Duplex{ToServer: HandlerFunc(p.toServer), ToClient: HandlerFunc(p.toClient)}
	}
}

type paramCheck struct {
	next  Duplex
	o     ParamCheckOptions
	log   *slog.Logger
	ids   IDMinter
	watch sync.Once
	dead  chan struct{} // closed when the child's Conn closes

	mu       sync.Mutex
	gen      uint64       // bumped when what was learned is forgotten
	tools    *listedTools // nil until listed
	fetching *toolsFetch  // the listing under way, if any
	waiting  map[frame.ID]chan frame.Message
}

// listedTools is what a tools/list taught: each tool's annotations.
type listedTools struct {
	valid   map[string][]ParamHeader
	invalid map[string]bool // tools whose annotations break a rule
}

// toolsFetch is one listing; done closes when it is over.
type toolsFetch struct {
	done  chan struct{}
	tools *listedTools // nil when it failed
	err   error
}

func (p *paramCheck) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() == frame.Request && m.Method() == "tools/call" {
		if err := p.check(ctx, m); err != nil {
			return err
		}
	}
	return p.next.ToServer.Handle(ctx, m)
}

func (p *paramCheck) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Result, frame.Error:
		if IsMinted(m.ID()) {
			p.mu.Lock()
			ch, ok := p.waiting[m.ID()]
			delete(p.waiting, m.ID())
			p.mu.Unlock()
			if ok {
				ch <- m // buffered, and sent to once
				return nil
			}
		}
	case frame.Notification:
		if m.Method() == "notifications/tools/list_changed" {
			p.forget()
		}
	}
	return p.next.ToClient.Handle(ctx, m)
}

// forget drops what was learned; a listing under way no longer teaches.
func (p *paramCheck) forget() {
	p.mu.Lock()
	p.gen++
	p.tools = nil
	p.fetching = nil
	p.mu.Unlock()
}

// watchConn has the stage let go of its state when the child's Conn
// closes.
func (p *paramCheck) watchConn(ctx context.Context) {
	p.watch.Do(func() {
		c := ConnOf(ctx)
		if c == nil {
			return
		}
		c.OnClose(func(error) {
			close(p.dead)
			p.forget()
		})
	})
}

// check refuses call when its Mcp-Param-* headers disagree with its
// arguments; nil when they agree or cannot be checked.
func (p *paramCheck) check(ctx context.Context, call frame.Message) error {
	params := messageParams(call)
	name := uniqueMember(params, "name")
	if name.Type != gjson.String {
		return nil // the child answers a call without a name
	}
	p.watchConn(ctx)
	tools, err := p.listed(ctx, call)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.log.Debug("tools/list failed: a tools/call passes with its Mcp-Param headers unchecked", "tool", name.Str, "id", call.ID().String(), "err", err)
		return nil
	}
	if tools.invalid[name.Str] {
		return nil
	}
	hs := tools.valid[name.Str]
	if len(hs) == 0 {
		return nil
	}
	if why := paramDisagreement(hs, uniqueMember(params, "arguments"), call.Header()); why != "" {
		p.log.Debug("a tools/call is refused: its Mcp-Param headers disagree with its arguments", "tool", name.Str, "id", call.ID().String(), "why", why)
		return mismatch(call.ID(), why)
	}
	return nil
}

// callVersion returns the protocol version a call claims in its _meta.
func callVersion(call frame.Message) string {
	if v := uniqueMember(call.Get("params._meta"), MetaProtocolVersion); v.Type == gjson.String {
		return v.Str
	}
	return ModernVersion
}

// paramDisagreement says how the Mcp-Param-* headers in h disagree with
// args for the annotations hs; "" when they agree.
func paramDisagreement(hs []ParamHeader, args gjson.Result, h http.Header) string {
	sent := paramHeaderValues(h)
	for _, ph := range hs {
		header := frame.HeaderParamPrefix + ph.Name
		vs := sent[strings.ToLower(ph.Name)]
		arg := argumentAt(args, ph.Path)
		_, has := headerText(arg)
		switch {
		case !has && len(vs) == 0:
			continue
		case !has:
			return "the " + header + " header is sent for an argument that is absent or null"
		case len(vs) == 0:
			return "the " + header + " header is missing"
		case len(vs) > 1:
			return "the " + header + " header is sent more than once"
		}
		got, err := frame.DecodeHeaderValue(vs[0])
		if err != nil {
			return "the " + header + " header is not valid =?base64?…?="
		}
		if !argumentAgrees(arg, got) {
			return "the " + header + " header does not match its argument"
		}
	}
	return ""
}

// paramHeaderValues returns the values of h's Mcp-Param-* headers by the
// lower-case name after the prefix.
func paramHeaderValues(h http.Header) map[string][]string {
	var out map[string][]string
	n := len(frame.HeaderParamPrefix)
	for k, vs := range h {
		if len(k) <= n || !strings.EqualFold(k[:n], frame.HeaderParamPrefix) {
			continue
		}
		if out == nil {
			out = make(map[string][]string)
		}
		name := strings.ToLower(k[n:])
		out[name] = append(out[name], vs...)
	}
	return out
}

// argumentAgrees reports whether the decoded header text got says what
// the argument arg (a string, a boolean or a number) does.
func argumentAgrees(arg gjson.Result, got string) bool {
	switch arg.Type {
	case gjson.String:
		return got == arg.Str
	case gjson.True:
		return got == "true"
	case gjson.False:
		return got == "false"
	case gjson.Number:
		return numbersEqual(arg.Raw, got)
	}
	return false
}

// numbersEqual reports whether the JSON number raw and the text got, which
// must be a JSON number too, are the same number. Numbers whose exponent
// is too large to expand are equal only when spelled the same.
func numbersEqual(raw, got string) bool {
	if !isJSONNumber(got) {
		return false
	}
	if raw == got {
		return true
	}
	a, ok := numberValue(raw)
	if !ok {
		return false
	}
	b, ok := numberValue(got)
	return ok && a.Cmp(b) == 0
}

// isJSONNumber reports whether s is a JSON number and nothing else.
func isJSONNumber(s string) bool {
	if s == "" || strings.TrimSpace(s) != s || !frame.Valid([]byte(s)) {
		return false
	}
	return gjson.Parse(s).Type == gjson.Number
}

// listed returns the child's tools: what was learned, else the listing
// under way, else a new one, under the protocol version call claims. It
// fails when the listing does, or ctx ends.
func (p *paramCheck) listed(ctx context.Context, call frame.Message) (*listedTools, error) {
	p.mu.Lock()
	if t := p.tools; t != nil {
		p.mu.Unlock()
		return t, nil
	}
	f := p.fetching
	if f == nil {
		f = &toolsFetch{done: make(chan struct{})}
		p.fetching = f
		gen := p.gen
		// The listing is the child's, not the call's: it goes on when the
		// call's client goes away, so that the calls waiting for it get it,
		// and is bounded by ListTimeout and the child's life instead.
		base := WithExchange(context.WithoutCancel(ctx), nil)
		go p.fetch(base, f, gen, callVersion(call))
	}
	p.mu.Unlock()
	select {
	case <-f.done:
		if f.tools == nil {
			return nil, f.err
		}
		return f.tools, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch runs the listing f, and learns its answer unless what was learned
// was forgotten meanwhile (gen is no longer p.gen).
func (p *paramCheck) fetch(base context.Context, f *toolsFetch, gen uint64, version string) {
	ctx, cancel := context.WithTimeout(base, p.o.ListTimeout)
	defer cancel()
	f.tools, f.err = p.list(ctx, version)
	p.mu.Lock()
	if f.tools != nil && gen == p.gen {
		p.tools = f.tools
	}
	if p.fetching == f {
		p.fetching = nil
	}
	p.mu.Unlock()
	close(f.done)
}

// errChildGone ends a listing whose child has gone.
var errChildGone = errors.New("the child is gone")

// list lists the child's tools, every page.
func (p *paramCheck) list(ctx context.Context, version string) (*listedTools, error) {
	t := &listedTools{valid: make(map[string][]ParamHeader), invalid: make(map[string]bool)}
	seen := make(map[string]bool)
	cursor := ""
	for page := 1; ; page++ {
		answer, err := p.call(ctx, toolsListRequest(version, cursor))
		if err != nil {
			return nil, err
		}
		tools := answer.Get("result.tools")
		if answer.Kind() != frame.Result || !tools.IsArray() {
			if code, ok := answer.ErrorCode(); ok {
				return nil, fmt.Errorf("tools/list answered error %d: %s", code, answer.Get("error.message").String())
			}
			return nil, errors.New("tools/list answered without a tools array")
		}
		tools.ForEach(func(_, tool gjson.Result) bool {
			name := lastMember(tool, "name")
			if name.Type != gjson.String {
				return true
			}
			hs, err := toolParamHeaders(lastMember(tool, "inputSchema"))
			if err != nil {
				t.invalid[name.Str] = true
				delete(t.valid, name.Str)
			} else {
				t.valid[name.Str] = hs
				delete(t.invalid, name.Str)
			}
			return true
		})
		next := answer.Get("result.nextCursor")
		if next.Type != gjson.String || next.Str == "" || seen[next.Str] || page >= p.o.MaxPages {
			return t, nil
		}
		seen[next.Str] = true
		cursor = next.Str
	}
}

// toolsListRequest returns the stage's tools/list, a 2026-07-28 request
// (its id is set when it is sent).
func toolsListRequest(version, cursor string) frame.Message {
	b := []byte(`{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{`)
	if cursor != "" {
		b = append(b, `"cursor":`...)
		b = append(b, jsonString(cursor)...)
		b = append(b, ',')
	}
	b = append(b, `"_meta":{`...)
	b = append(b, jsonString(MetaProtocolVersion)...)
	b = append(b, ':')
	b = append(b, jsonString(version)...)
	b = append(b, ',')
	b = append(b, jsonString(MetaClientCapabilities)...)
	b = append(b, `:{}}}}`...)
	m, err := frame.Parse(b)
	if err != nil { // unreachable: the bytes are built valid
		panic("mw: building tools/list: " + err.Error())
	}
	return m
}

// call sends req down under a minted id and waits for its answer, which
// toClient takes.
func (p *paramCheck) call(ctx context.Context, req frame.Message) (frame.Message, error) {
	id := p.ids.Mint("paramcheck")
	m, err := req.WithID(id)
	if err != nil {
		return frame.Message{}, err
	}
	answer := make(chan frame.Message, 1)
	p.mu.Lock()
	p.waiting[id] = answer
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, id)
		p.mu.Unlock()
	}()
	if err := p.next.ToServer.Handle(ctx, m); err != nil {
		return frame.Message{}, err
	}
	select {
	case a := <-answer:
		return a, nil
	case <-ctx.Done():
		return frame.Message{}, fmt.Errorf("no answer to tools/list: %w", ctx.Err())
	case <-p.dead:
		return frame.Message{}, errChildGone
	}
}
