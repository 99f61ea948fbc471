package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The test binary doubles as two programs the conformance test hands to
// others, chosen by its first argument (see the init function in
// e2e_main_test.go):
//
//	<test binary> mcp-stdio-conformance-client RELAY URL
//	    the MCP client the suite runs in client mode (it appends URL): it
//	    spawns RELAY … URL (with --oauth for the auth/* scenarios) and
//	    talks MCP to it over stdio, playing the scenario (confPlays);
//	<test binary> mcp-stdio-conformance-browser URL
//	    the user's browser ($BROWSER of that relay): it follows the
//	    authorization redirect to the relay's callback.
const (
	confClientArg  = "mcp-stdio-conformance-client"
	confBrowserArg = "mcp-stdio-conformance-browser"
	// confSessionEraHostArg, before RELAY, makes the client a session-era
	// host: it asks for 2025-11-25 whatever the scenario's version, and the
	// relay runs with --era modern, bridging it to the scenario's
	// 2026-07-28 server.
	confSessionEraHostArg = "--session-era-host"
)

// Client program settings.
const (
	// confClientDeadline bounds one client run; it is below the suite's
	// per-scenario timeout (confClientTimeout) so the client gives up and
	// reports before the suite kills it.
	confClientDeadline = 50 * time.Second
	// confRelayExit is how long the client waits for the relay to exit
	// after closing its stdin.
	confRelayExit = 10 * time.Second
	// confRetryWait and confRetries pace the retries of a request answered
	// -32002 (a sign-in is under way; the relay's contract is "retry
	// later").
	confRetryWait = 500 * time.Millisecond
	confRetries   = 20
	// confCIMDURL is the client metadata URL auth/basic-cimd expects as
	// client_id.
	confCIMDURL = "https://conformance-test.local/client-metadata.json"
	// confTestTool is the tool every authorization scenario's server has.
	confTestTool = "test-tool"
	// confClientFailed starts the line on which the client reports why it
	// failed; the test quotes it in the scenario's notes.
	confClientFailed = "conformance client: FAILED: "
)

// confNoRetry names the scenarios in which the client plays a host that
// does not retry a request answered -32002 (a sign-in under way) but
// fails, as the TypeScript SDK's hosts do, with the reason: the relay must
// get there without asking the host to come back.
var confNoRetry = map[string]string{
	// SEP-2352: the relay signs in at the new authorization server while
	// the request waits, as for a first sign-in, instead of answering
	// -32002 and signing in in the background.
	"auth/authorization-server-migration": "the new authorization server's sign-in runs while the request waits",
}

// confScenarioContext is the part of MCP_CONFORMANCE_CONTEXT the client
// uses: pre-registered credentials (auth/pre-registration).
type confScenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// ToolCalls are the calls http-custom-headers asks for.
	ToolCalls []confToolCall `json:"toolCalls"`
}

// confToolCall is a tool call a scenario context asks for.
type confToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// confAuthScenario reports whether a scenario is an authorization one: the
// relay runs with --oauth for those, and without for the others.
func confAuthScenario(scenario string) bool { return strings.HasPrefix(scenario, "auth/") }

// confRelayArgs returns the relay's arguments for a scenario; bridge
// forces the bridge to 2026-07-28 (--era modern) for a session-era host.
func confRelayArgs(scenario string, sc confScenarioContext, url string, bridge bool) []string {
	var args []string
	if bridge {
		args = []string{"--era", "modern"}
	}
	if !confAuthScenario(scenario) {
		return append(args, "--log-level", "debug", url)
	}
	args = append(args, "--oauth", "--log-level", "debug", "--oauth-timeout", "30")
	if sc.ClientID != "" {
		args = append(args, "--client-id", sc.ClientID)
	}
	if sc.ClientSecret != "" {
		args = append(args, "--client-secret", sc.ClientSecret)
	}
	if scenario == "auth/basic-cimd" {
		args = append(args, "--client-metadata-url", confCIMDURL)
	}
	return append(args, url)
}

// confClientMain is the client program: args are RELAY URL; the suite
// passes the scenario in the environment (MCP_CONFORMANCE_SCENARIO,
// MCP_CONFORMANCE_CONTEXT, MCP_CONFORMANCE_PROTOCOL_VERSION). It returns
// the exit code.
func confClientMain(args []string, getenv func(string) string, stderr io.Writer) int {
	sessionEraHost := len(args) > 0 && args[0] == confSessionEraHostArg
	if sessionEraHost {
		args = args[1:]
	}
	if len(args) != 2 {
		fmt.Fprintf(stderr, "usage: %s RELAY URL\n", confClientArg)
		return 2
	}
	relay, url := args[0], args[1]
	scenario := getenv("MCP_CONFORMANCE_SCENARIO")
	version := getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")
	spec := version
	if sessionEraHost {
		version = "2025-11-25"
	}
	var sc confScenarioContext
	if raw := getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			fmt.Fprintf(stderr, "conformance client: MCP_CONFORMANCE_CONTEXT: %v\n", err)
			return 2
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "conformance client: %v\n", err)
		return 1
	}
	// A fresh token store: no grant leaks from one scenario to the next.
	home, err := os.MkdirTemp("", "mcp-stdio-conformance-home-")
	if err != nil {
		fmt.Fprintf(stderr, "conformance client: %v\n", err)
		return 1
	}
	defer os.RemoveAll(home)

	play, ok := confPlays[scenario]
	switch {
	case ok:
	case confAuthScenario(scenario):
		play = confPlayAuth
	default:
		fmt.Fprintf(stderr, "conformance client: no play for scenario %q\n", scenario)
		return 2
	}

	ctx, cancel := context.WithTimeout(context.Background(), confClientDeadline)
	defer cancel()
	c := &confClient{
		relay:   relay,
		url:     url,
		args:    confRelayArgs(scenario, sc, url, sessionEraHost),
		env:     append(os.Environ(), "XDG_CONFIG_HOME="+home, "BROWSER="+self+" "+confBrowserArg),
		version: version,
		spec:    spec,
		stderr:  stderr,
		play:    play,
		wire:    &confWire{},
		calls:   sc.ToolCalls,
		tries:   confRetries,
	}
	if _, ok := confNoRetry[scenario]; ok {
		c.tries = 1
	}
	if !confAuthScenario(scenario) {
		c.opts = &mcp.ClientOptions{ElicitationHandler: c.acceptDefaults}
	}
	fmt.Fprintf(stderr, "conformance client: scenario %s at %s: %s %s\n", scenario, version, relay, strings.Join(c.args, " "))
	if err := c.run(ctx); err != nil {
		fmt.Fprintf(stderr, "%s%v\n", confClientFailed, err)
		return 1
	}
	return 0
}

// confClient drives one relay process with the go-sdk client.
type confClient struct {
	relay   string
	url     string // the scenario server, which the relay is given
	args    []string
	env     []string
	version string // protocol version the go-sdk client asks for
	spec    string // the scenario's spec version (its server's)
	stderr  io.Writer
	opts    *mcp.ClientOptions // the go-sdk client's options; nil for none
	play    confPlay
	// wire keeps the raw results the relay printed.
	wire *confWire
	// elicited counts the elicitation requests answered.
	elicited atomic.Int32
	// calls are the tool calls the scenario context asks for.
	calls []confToolCall
	// tries bounds the tries of a request answered -32002 (confNoRetry).
	tries int
}

// confPlay is what the client does in a scenario once the session through
// the relay is up.
type confPlay func(ctx context.Context, c *confClient, cs *mcp.ClientSession) error

// run connects through the relay and plays the scenario.
func (c *confClient) run(ctx context.Context) error {
	cs, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := cs.Close(); err != nil {
			fmt.Fprintf(c.stderr, "conformance client: relay exit: %v\n", err)
		}
	}()
	return c.play(ctx, c, cs)
}

// confPlayAuth is the play of the authorization scenarios: list the tools
// and call the test tool, retrying while a sign-in is under way.
func confPlayAuth(ctx context.Context, c *confClient, cs *mcp.ClientSession) error {
	var tools *mcp.ListToolsResult
	if err := confRetry(ctx, c.stderr, "tools/list", c.tries, func() (err error) {
		tools, err = cs.ListTools(ctx, nil)
		return err
	}); err != nil {
		return err
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == confTestTool }) {
		return fmt.Errorf("tools/list: no %q tool", confTestTool)
	}
	return confRetry(ctx, c.stderr, "tools/call", c.tries, func() error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: confTestTool, Arguments: map[string]any{}})
		return err
	})
}

// connect starts the relay and performs the handshake. A handshake
// answered -32002 is tried again with a new relay process: the first one
// was closed with the failed session, and the token store carries the
// sign-in over.
func (c *confClient) connect(ctx context.Context) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-stdio-conformance-client", Version: "1"}, c.opts)
	var cs *mcp.ClientSession
	err := confRetry(ctx, c.stderr, "connect", c.tries, func() error {
		cmd := exec.Command(c.relay, c.args...)
		cmd.Env = c.env
		cmd.Stderr = c.stderr
		var err error
		t := &mcp.CommandTransport{Command: cmd, TerminateDuration: confRelayExit}
		cs, err = client.Connect(ctx, c.wire.wrap(t), &mcp.ClientSessionOptions{ProtocolVersion: c.version})
		return err
	})
	return cs, err
}

// confRetry calls f until it returns anything but a -32002 error, waiting
// confRetryWait between tries, at most tries times.
func confRetry(ctx context.Context, stderr io.Writer, what string, tries int, f func() error) error {
	for try := 1; ; try++ {
		err := f()
		var we *jsonrpc.Error
		if err == nil || !errors.As(err, &we) || we.Code != frame.CodeReauthorizing || try >= tries {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		fmt.Fprintf(stderr, "conformance client: %s answered -32002 (%s); retrying\n", what, we.Message)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(confRetryWait):
		}
	}
}
