package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The client's plays in the scenarios that test the relay as an MCP
// client's path to a server (the relay runs without --oauth): each
// connects through the relay at the suite's spec version, then does what
// the scenario's server waits for, and checks what it can see of the
// outcome from the client's side. The suite scores the server's side.
var confPlays = map[string]confPlay{
	"initialize":                          confPlayInitialize,
	"tools_call":                          confPlayToolsCall,
	"elicitation-sep1034-client-defaults": confPlayElicitationDefaults,
	"sse-retry":                           confPlaySSERetry,
	"json-schema-2020-12-preservation":    confPlaySchemaPreservation,
	// 2026-07-28 (issue 11).
	"request-metadata":              confPlayListTools,
	"json-schema-ref-no-deref":      confPlayListTools,
	"http-standard-headers":         confPlayStandardHeaders,
	"http-custom-headers":           confPlayContextCalls,
	"http-invalid-tool-headers":     confPlayCallEveryTool,
	"sep-2322-client-request-state": confPlayMRTR,
}

// confPlayContextCalls lists the tools, then calls the tools the scenario
// context names with its arguments: the scenario's server checks the
// Mcp-Param-* headers mirrored from the arguments.
func confPlayContextCalls(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	if len(c.calls) == 0 {
		return errors.New("the scenario context names no tool call")
	}
	for _, call := range c.calls {
		if err := confHasTools(ctx, cs, call.Name); err != nil {
			return err
		}
		if _, err := confCall(ctx, cs, call.Name, call.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// confPlayCallEveryTool lists the tools and calls each one listed with a
// string for every property: the scenario's server checks that the tools
// with an invalid x-mcp-header annotation never reach the client (the
// relay drops them from the list) while the valid one is called.
func confPlayCallEveryTool(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		args := map[string]any{}
		if schema, ok := tool.InputSchema.(map[string]any); ok {
			props, _ := schema["properties"].(map[string]any)
			for name := range props {
				args[name] = "x"
			}
		}
		if _, err := confCall(ctx, cs, tool.Name, args); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stderr, "conformance client: tools listed and called: %v\n", names)
	return nil
}

// The tools of sep-2322-client-request-state, in the order the play calls
// them: two that ask for input (with and without requestState), one
// called in between, one whose result has no resultType.
var confMRTRTools = []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"}

// confPlayMRTR calls the MRTR tools: as a session-era host the client
// answers the relay's elicitation/create (the MRTR bridge turns the
// server's input_required result into it and retries the call); as a
// 2026-07-28 host the go-sdk client runs the MRTR rounds itself through
// the relay.
func confPlayMRTR(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	if err := confHasTools(ctx, cs, confMRTRTools...); err != nil {
		return err
	}
	for _, name := range confMRTRTools {
		res, err := confCall(ctx, cs, name, map[string]any{})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("tools/call %s: error result %q", name, confToolText(res))
		}
	}
	return nil
}

// confPlayListTools lists the tools: the scenario's server judges the
// request (its _meta and headers) or the client's handling of the list.
func confPlayListTools(ctx context.Context, _ *confClient, cs *mcp.ClientSession) error {
	_, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	return nil
}

// confPlayStandardHeaders sends every request whose routing headers the
// scenario's server checks: each list, and a call, a read and a get of
// every tool, resource and prompt it offers.
func confPlayStandardHeaders(ctx context.Context, _ *confClient, cs *mcp.ClientSession) error {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range tools.Tools {
		if _, err := confCall(ctx, cs, tool.Name, map[string]any{}); err != nil {
			return err
		}
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		return fmt.Errorf("resources/list: %w", err)
	}
	for _, r := range resources.Resources {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI}); err != nil {
			return fmt.Errorf("resources/read %s: %w", r.URI, err)
		}
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		return fmt.Errorf("prompts/list: %w", err)
	}
	for _, p := range prompts.Prompts {
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.Name}); err != nil {
			return fmt.Errorf("prompts/get %s: %w", p.Name, err)
		}
	}
	return nil
}

// The tools the scenarios' servers offer.
const (
	confAddTool         = "add_numbers"                      // tools_call
	confElicitationTool = "test_client_elicitation_defaults" // elicitation-sep1034-client-defaults
	confReconnectTool   = "test_reconnection"                // sse-retry
	confSchemaTool      = "json_schema_2020_12_tool"         // json-schema-2020-12-preservation
	confEchoTool        = "json_schema_echo"                 // json-schema-2020-12-preservation
)

// confCallTimeout bounds a play's tool call. Each is answered well within
// a second when the relay carries every message (sse-retry's server
// answers after the half-second retry interval it gives); a call whose
// answer depends on a message the relay lost fails at this bound rather
// than at the client's deadline.
const confCallTimeout = 10 * time.Second

// confPlayInitialize checks the handshake the relay carried: the server
// answered at the version the client asked for.
func confPlayInitialize(_ context.Context, c *confClient, cs *mcp.ClientSession) error {
	res := cs.InitializeResult()
	switch {
	case res == nil:
		return errors.New("initialize: no result")
	case res.ProtocolVersion != c.version:
		return fmt.Errorf("initialize: the server answered version %q, want %q", res.ProtocolVersion, c.version)
	case res.ServerInfo == nil || res.ServerInfo.Name == "":
		return errors.New("initialize: the result names no server")
	}
	return nil
}

// confPlayToolsCall calls the adding tool and checks the sum in its
// answer.
func confPlayToolsCall(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	if err := confHasTools(ctx, cs, confAddTool); err != nil {
		return err
	}
	res, err := confCall(ctx, cs, confAddTool, map[string]any{"a": 2, "b": 3})
	if err != nil {
		return err
	}
	if text := confToolText(res); res.IsError || !strings.Contains(text, "5") {
		return fmt.Errorf("tools/call %s(2, 3): error %v, text %q; want the sum 5", confAddTool, res.IsError, text)
	}
	return nil
}

// confPlayElicitationDefaults calls the tool that elicits a form whose
// fields all have defaults; the client accepts the form as presented
// (acceptDefaults), through the relay, while the call is open.
func confPlayElicitationDefaults(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	if err := confHasTools(ctx, cs, confElicitationTool); err != nil {
		return err
	}
	res, err := confCall(ctx, cs, confElicitationTool, map[string]any{})
	if err != nil {
		return fmt.Errorf("%w (elicitations that reached the client: %d)", err, c.elicited.Load())
	}
	fmt.Fprintf(c.stderr, "conformance client: %s answered %q\n", confElicitationTool, confToolText(res))
	if n := c.elicited.Load(); n != 1 || res.IsError {
		return fmt.Errorf("tools/call %s: %d elicitations answered (want 1), error result %v", confElicitationTool, n, res.IsError)
	}
	return nil
}

// confPlaySSERetry calls the tool whose answer only comes on a
// reconnected stream.
func confPlaySSERetry(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	if err := confHasTools(ctx, cs, confReconnectTool); err != nil {
		return err
	}
	res, err := confCall(ctx, cs, confReconnectTool, map[string]any{})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tools/call %s: error result %q", confReconnectTool, confToolText(res))
	}
	return nil
}

// confPlaySchemaPreservation sends the schema tool's inputSchema back to
// the server through the echo tool, as the exact bytes the relay printed
// (not as the go-sdk decoded them), and checks those bytes against the
// server's own tools/list answer fetched without the relay.
func confPlaySchemaPreservation(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	if err := confHasTools(ctx, cs, confSchemaTool, confEchoTool); err != nil {
		return err
	}
	relayed, err := confInputSchema(c.wire.result("tools/list"), confSchemaTool)
	if err != nil {
		return fmt.Errorf("through the relay: %w", err)
	}
	if _, err := confCall(ctx, cs, confEchoTool, map[string]any{"schema": json.RawMessage(relayed)}); err != nil {
		return err
	}
	direct, err := confDirectResult(ctx, c.url, c.spec, "tools/list")
	if err != nil {
		return fmt.Errorf("without the relay: %w", err)
	}
	served, err := confInputSchema(direct, confSchemaTool)
	if err != nil {
		return fmt.Errorf("without the relay: %w", err)
	}
	if !bytes.Equal(relayed, served) {
		return fmt.Errorf("%s's inputSchema changed in the relay:\nserved:  %s\nrelayed: %s", confSchemaTool, served, relayed)
	}
	return nil
}

// acceptDefaults answers a form elicitation as a user who submits the form
// as presented: every field with a default keeps it (SEP-1034: a client
// pre-fills the form with the schema's defaults).
func (c *confClient) acceptDefaults(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c.elicited.Add(1)
	schema, _ := req.Params.RequestedSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	content := map[string]any{}
	for name, p := range props {
		if p, ok := p.(map[string]any); ok {
			if v, ok := p["default"]; ok {
				content[name] = v
			}
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// confHasTools lists the tools and checks that names are among them.
func confHasTools(ctx context.Context, cs *mcp.ClientSession, names ...string) error {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, name := range names {
		if !slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			return fmt.Errorf("tools/list: no %q tool", name)
		}
	}
	return nil
}

// confCall calls a tool, within confCallTimeout.
func confCall(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, confCallTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", name, err)
	}
	return res, nil
}

// confToolText joins the text content of a tool result.
func confToolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// confInputSchema returns the raw inputSchema of a tool in a raw
// tools/list result.
func confInputSchema(result []byte, tool string) ([]byte, error) {
	if result == nil {
		return nil, errors.New("no tools/list result")
	}
	r := gjson.GetBytes(result, `tools.#(name==`+confJSONString(tool)+`).inputSchema`)
	if !r.Exists() {
		return nil, fmt.Errorf("no inputSchema for %s in %s", tool, result)
	}
	return []byte(r.Raw), nil
}

// confJSONString quotes s as a JSON string.
func confJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// confDirectResult sends one request with empty params straight to the
// Streamable HTTP server at url, and returns the raw result of its answer
// (a JSON body, or the first response on an event stream).
func confDirectResult(ctx context.Context, url, version, method string) ([]byte, error) {
	params := `{}`
	if version >= "2026-07-28" {
		// A 2026-07-28 server takes a request with its _meta only.
		params = `{"_meta":{"io.modelcontextprotocol/protocolVersion":` + confJSONString(version) + `,"io.modelcontextprotocol/clientCapabilities":{}}}`
	}
	body := `{"jsonrpc":"2.0","id":1,"method":` + confJSONString(method) + `,"params":` + params + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	req.Header.Set("Mcp-Method", method)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	msg, err := confFirstResponse(resp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	r := gjson.GetBytes(msg, "result")
	if !r.Exists() {
		return nil, fmt.Errorf("%s: no result in %s", method, msg)
	}
	return []byte(r.Raw), nil
}

// confFirstResponse returns the body of a JSON answer, or the data of the
// first event carrying a response on an event stream.
func confFirstResponse(resp *http.Response) ([]byte, error) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return io.ReadAll(resp.Body)
	}
	rd := frame.NewSSEReader(resp.Body, 0)
	for {
		ev, err := rd.Next()
		if err != nil {
			return nil, fmt.Errorf("event stream ended before a response: %w", err)
		}
		if gjson.GetBytes(ev.Data, "id").Exists() {
			return ev.Data, nil
		}
	}
}

// confWire keeps, for each method the client called through the relay,
// the raw result of its last answer as the relay printed it: the go-sdk
// hands a response's result over as the bytes of the line it read.
type confWire struct {
	mu      sync.Mutex
	calls   map[jsonrpc.ID]string
	results map[string][]byte
}

// wrap returns t with its connections' traffic watched by w.
func (w *confWire) wrap(t mcp.Transport) mcp.Transport { return &confWireTransport{Transport: t, w: w} }

// sent notes a call's method.
func (w *confWire) sent(id jsonrpc.ID, method string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[jsonrpc.ID]string{}
	}
	w.calls[id] = method
}

// received keeps the raw result of an answer to a call.
func (w *confWire) received(id jsonrpc.ID, result []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	method, ok := w.calls[id]
	if !ok || result == nil {
		return
	}
	delete(w.calls, id)
	if w.results == nil {
		w.results = map[string][]byte{}
	}
	w.results[method] = slices.Clone(result)
}

// result returns the raw result of the last answer to method, or nil.
func (w *confWire) result(method string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.results[method]
}

// confWireTransport is a transport whose connections confWire watches.
type confWireTransport struct {
	mcp.Transport
	w *confWire
}

// Connect connects the wrapped transport and watches the connection.
func (t *confWireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &confWireConn{Connection: conn, w: t.w}, nil
}

// confWireConn is a connection whose calls and answers confWire watches.
type confWireConn struct {
	mcp.Connection
	w *confWire
}

// Write notes the method of an outgoing call.
func (c *confWireConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
		c.w.sent(r.ID, r.Method)
	}
	return c.Connection.Write(ctx, m)
}

// Read keeps the raw result of an incoming answer.
func (c *confWireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil {
		c.w.received(r.ID, r.Result)
	}
	return m, err
}
