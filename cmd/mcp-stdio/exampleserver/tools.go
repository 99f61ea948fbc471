package exampleserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/tidwall/gjson"
)

// maxToolBytes caps the bytes tool: 64 MiB, the default message cap.
const maxToolBytes = 64 << 20

// tool is one entry of the tool dispatcher.
type tool struct {
	name        string
	description string
	// inputSchema (and outputSchema, when set) are JSON Schema documents.
	inputSchema  json.RawMessage
	outputSchema json.RawMessage
	// annotatedSchema, when set, replaces inputSchema in tools/list with
	// [Options.ParamHeader]: the same schema with x-mcp-header
	// annotations.
	annotatedSchema json.RawMessage
	// optional tools are listed and callable only while toggled on.
	optional bool
	// askRoots tools are listed and callable only with Options.AskRoots.
	askRoots bool
	// run does the work. Bad arguments are an *rpcError (-32602); a
	// failure of the tool itself is a result with isError (errorResult).
	run func(s *server, ctx context.Context, req *request, args gjson.Result) (object, error)
}

// toolTable is the one tool dispatcher: tools/list lists it in this order
// and tools/call finds the handler by name.
var toolTable = []tool{
	{
		name:            "echo",
		description:     "Returns its text argument unchanged.",
		inputSchema:     json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text to echo."}},"required":["text"]}`),
		annotatedSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text to echo.","x-mcp-header":"Text"}},"required":["text"]}`),
		run:             (*server).echo,
	},
	{
		name:         "add",
		description:  "Adds two numbers; the sum comes as text and as structured content.",
		inputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		outputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`),
		run:          (*server).add,
	},
	{
		name: "slow",
		description: "Works for the given number of seconds in equal steps, reporting progress after each " +
			"step when the request carries a progress token. Cancel it with notifications/cancelled.",
		inputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"seconds":{"type":"number","minimum":0,"maximum":3600,"default":1,"description":"Total duration."},` +
			`"steps":{"type":"integer","minimum":1,"maximum":1000,"default":5,"description":"Number of progress steps."}}}`),
		run: (*server).slow,
	},
	{
		name:        "bytes",
		description: "Returns a text content of exactly n bytes, for large-message tests.",
		inputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":67108864}},"required":["n"]}`),
		run:         (*server).bytes,
	},
	{
		name: "ask",
		description: "Asks the user a question through the client (elicitation) and returns the answer. " +
			"Needs a client that declares the elicitation capability.",
		inputSchema: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
		run:         (*server).ask,
	},
	{
		name:        "toggle",
		description: "Adds the bonus tool, or removes it if present, and announces that the tool list changed.",
		inputSchema: json.RawMessage(`{"type":"object"}`),
		run:         (*server).toggle,
	},
	{
		name: "roots",
		description: "Returns the client's roots: those the server asked for when the connection started, or, " +
			"with ask, those a roots/list asked now gets. Offered with --ask-roots only.",
		inputSchema: json.RawMessage(`{"type":"object","properties":{"ask":{"type":"boolean","description":"Ask the client now."}}}`),
		askRoots:    true,
		run:         (*server).rootsTool,
	},
	{
		name:        "bonus",
		description: "A tool that exists only while toggled on.",
		inputSchema: json.RawMessage(`{"type":"object"}`),
		optional:    true,
		run:         (*server).bonusTool,
	},
}

// availableTools returns the tools currently offered, in table order.
func (s *server) availableTools() []*tool {
	s.mu.Lock()
	bonus := s.bonus
	s.mu.Unlock()
	ts := make([]*tool, 0, len(toolTable))
	for i := range toolTable {
		if t := &toolTable[i]; (!t.optional || bonus) && (!t.askRoots || s.opts.AskRoots) {
			ts = append(ts, t)
		}
	}
	return ts
}

// listTools answers tools/list.
func (s *server) listTools(_ context.Context, req *request) (object, error) {
	ts, next, err := paginate(s, req, s.availableTools())
	if err != nil {
		return nil, err
	}
	defs := make([]object, len(ts))
	for i, t := range ts {
		def := object{"name": t.name, "description": t.description, "inputSchema": t.inputSchema}
		if s.opts.ParamHeader && t.annotatedSchema != nil {
			def["inputSchema"] = t.annotatedSchema
		}
		if t.outputSchema != nil {
			def["outputSchema"] = t.outputSchema
		}
		defs[i] = def
	}
	return page("tools", defs, next), nil
}

// callTool answers tools/call: it finds the tool in the table, counts the
// call (example://counter) and runs it.
func (s *server) callTool(ctx context.Context, req *request) (object, error) {
	name := req.params.Get("name")
	if name.Type != gjson.String {
		return nil, invalidParams("tools/call needs params.name (a string)")
	}
	var t *tool
	for _, c := range s.availableTools() {
		if c.name == name.Str {
			t = c
			break
		}
	}
	if t == nil {
		return nil, invalidParams("unknown tool %q", name.Str)
	}
	args := req.params.Get("arguments")
	if args.Exists() && !args.IsObject() && args.Type != gjson.Null {
		return nil, invalidParams("arguments must be an object")
	}
	s.mu.Lock()
	s.toolCalls++
	s.mu.Unlock()
	s.resourceUpdated(counterURI)
	return t.run(s, ctx, req, args)
}

// textResult is a successful tool result with one text content.
func textResult(text string) object {
	return object{"content": []object{{"type": "text", "text": text}}}
}

// errorResult is a tool result reporting the tool's own failure.
func errorResult(format string, args ...any) object {
	res := textResult(fmt.Sprintf(format, args...))
	res["isError"] = true
	return res
}

func (s *server) echo(_ context.Context, _ *request, args gjson.Result) (object, error) {
	text, err := stringArg(args, "text")
	if err != nil {
		return nil, err
	}
	return textResult(text), nil
}

func (s *server) add(_ context.Context, _ *request, args gjson.Result) (object, error) {
	a, err := numberArg(args, "a", nil)
	if err != nil {
		return nil, err
	}
	b, err := numberArg(args, "b", nil)
	if err != nil {
		return nil, err
	}
	sum := a + b
	if math.IsInf(sum, 0) {
		return errorResult("the sum of %g and %g overflows", a, b), nil
	}
	res := textResult(strconv.FormatFloat(sum, 'g', -1, 64))
	res["structuredContent"] = object{"sum": sum}
	return res, nil
}

func (s *server) slow(ctx context.Context, req *request, args gjson.Result) (object, error) {
	seconds, err := numberArg(args, "seconds", &numberRange{def: 1, lo: 0, hi: 3600})
	if err != nil {
		return nil, err
	}
	steps, err := intArg(args, "steps", &intRange{def: 5, lo: 1, hi: 1000})
	if err != nil {
		return nil, err
	}
	step := time.Duration(seconds * float64(time.Second) / float64(steps))
	for i := 1; i <= steps; i++ {
		if frame.Sleep(ctx, step) != nil {
			return nil, context.Cause(ctx)
		}
		msg := fmt.Sprintf("step %d of %d", i, steps)
		s.progress(req, float64(i), float64(steps), msg)
		s.clientLog(req, "info", "slow: "+msg)
	}
	return textResult(fmt.Sprintf("slow: finished %d steps in %g seconds", steps, seconds)), nil
}

func (s *server) bytes(_ context.Context, _ *request, args gjson.Result) (object, error) {
	n, err := intArg(args, "n", &intRange{def: -1, lo: 0, hi: s.opts.maxBytes})
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalidParams("argument %q is required", "n")
	}
	return textResult(strings.Repeat("x", n)), nil
}

// ask asks the user a question. On a session-era connection it sends the
// client a real elicitation/create request and waits for its answer; a
// 2026-07-28 request gets an input_required result and is completed by its
// retry (stateless.go).
func (s *server) ask(ctx context.Context, req *request, args gjson.Result) (object, error) {
	question, err := stringArg(args, "question")
	if err != nil {
		return nil, err
	}
	if !canElicitForm(req.caps) {
		return errorResult("ask needs a client that supports form elicitation, and this client did not declare the elicitation capability"), nil
	}
	if req.stateless {
		return s.askWithInputRequest(req, question)
	}
	s.mu.Lock()
	withMode := s.protocolVersion == "2025-11-25"
	s.mu.Unlock()
	reply, ok, err := s.requestClient(ctx, req, "elicitation/create", elicitParams(question, withMode))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return errorResult("the client did not answer the question (stdin closed or too many questions pending)"), nil
	case reply.Get("error").Exists():
		return errorResult("the client could not ask the question: %s", reply.Get("error.message").String()), nil
	}
	return elicitOutcome(reply.Get("result")), nil
}

// canElicitForm reports whether client capabilities allow form
// elicitation: "elicitation" present and either empty (form, in 2025-06-18)
// or with "form".
func canElicitForm(caps gjson.Result) bool {
	e := caps.Get("elicitation")
	if !e.IsObject() {
		return false
	}
	return e.Get("form").Exists() || !e.Get("url").Exists()
}

// elicitParams are the params of the elicitation/create that asks question.
// The mode member exists from 2025-11-25 on.
func elicitParams(question string, withMode bool) object {
	p := object{
		"message":         question,
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","title":"Answer"}},"required":["answer"]}`),
	}
	if withMode {
		p["mode"] = "form"
	}
	return p
}

// elicitOutcome turns an ElicitResult into the ask tool's result.
func elicitOutcome(r gjson.Result) object {
	action := r.Get("action").String()
	var res object
	switch action {
	case "accept":
		answer := r.Get("content.answer").String()
		res = textResult("The user answered: " + answer)
		res["structuredContent"] = object{"action": action, "answer": answer}
		return res
	case "decline":
		res = textResult("The user declined to answer.")
	case "cancel":
		res = textResult("The user dismissed the question.")
	default:
		return errorResult("the client answered with an unknown action %q", action)
	}
	res["structuredContent"] = object{"action": action}
	return res
}

func (s *server) toggle(_ context.Context, _ *request, _ gjson.Result) (object, error) {
	s.mu.Lock()
	s.bonus = !s.bonus
	on := s.bonus
	s.mu.Unlock()
	s.toolsChanged()
	if on {
		return textResult("The bonus tool is now available."), nil
	}
	return textResult("The bonus tool was removed."), nil
}

func (s *server) bonusTool(_ context.Context, _ *request, _ gjson.Result) (object, error) {
	return textResult("You found the bonus tool."), nil
}

// Argument readers. They answer -32602 for a missing or mistyped argument.

func stringArg(args gjson.Result, name string) (string, error) {
	v := args.Get(gjson.Escape(name))
	if v.Type != gjson.String {
		return "", invalidParams("argument %q must be a string", name)
	}
	return v.Str, nil
}

// numberRange makes a number argument optional, with a default and bounds.
type numberRange struct{ def, lo, hi float64 }

func numberArg(args gjson.Result, name string, r *numberRange) (float64, error) {
	v := args.Get(gjson.Escape(name))
	if !v.Exists() && r != nil {
		return r.def, nil
	}
	if v.Type != gjson.Number || math.IsInf(v.Num, 0) || math.IsNaN(v.Num) {
		return 0, invalidParams("argument %q must be a number", name)
	}
	if r != nil && (v.Num < r.lo || v.Num > r.hi) {
		return 0, invalidParams("argument %q must be between %g and %g", name, r.lo, r.hi)
	}
	return v.Num, nil
}

// intRange makes an integer argument optional, with a default and bounds.
type intRange struct{ def, lo, hi int }

func intArg(args gjson.Result, name string, r *intRange) (int, error) {
	v := args.Get(gjson.Escape(name))
	if !v.Exists() {
		return r.def, nil
	}
	if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) {
		return 0, invalidParams("argument %q must be an integer", name)
	}
	if v.Num < float64(r.lo) || v.Num > float64(r.hi) {
		return 0, invalidParams("argument %q must be between %d and %d", name, r.lo, r.hi)
	}
	return int(v.Num), nil
}
