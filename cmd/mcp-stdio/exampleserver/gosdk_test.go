package exampleserver

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// TestBinary drives the real mcp-stdio binary's example-server: its flags,
// and the official Go SDK client (v1.8.0) talking to it on both eras.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mcp-stdio")
	build := exec.Command("go", "build", "-o", bin, "github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	t.Run("flags", func(t *testing.T) { testFlags(t, bin) })

	for _, tc := range []struct {
		name      string
		requested string // ClientSessionOptions.ProtocolVersion
		want      string // the version the session ends up with
	}{
		{"go-sdk session era 2025-11-25", "2025-11-25", "2025-11-25"},
		{"go-sdk session era 2025-06-18", "2025-06-18", "2025-06-18"},
		{"go-sdk probe picks 2026-07-28", "", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()

			var stderr transporttest.SyncBuffer
			defer func() {
				if t.Failed() {
					t.Logf("server stderr:\n%s", stderr.String())
				}
			}()
			progress := make(chan float64, 16)
			toolsChanged := make(chan struct{}, 4)
			client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "answer to " + req.Params.Message}}, nil
				},
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					progress <- req.Params.Progress
				},
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					toolsChanged <- struct{}{}
				},
			})
			cmd := exec.Command(bin, "example-server", "--log-level", "debug")
			cmd.Stderr = &stderr
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: tc.requested})
			is.NoErr(err)
			defer func() {
				is.NoErr(cs.Close()) // waits for the process, and its stderr
				// Started on pipes as its own process: stdin is polled and
				// Go code runs on one thread (cli.tuneStdioProcess).
				is.True(strings.Contains(stderr.String(), "gomaxprocs=1 stdin_polled=true"))
			}()
			is.Equal(cs.InitializeResult().ProtocolVersion, tc.want)
			is.Equal(cs.InitializeResult().ServerInfo.Name, "mcp-stdio-example")

			tools, err := cs.ListTools(ctx, nil)
			is.NoErr(err)
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			is.Equal(names, []string{"echo", "add", "slow", "bytes", "ask", "toggle"})

			text := func(res *mcp.CallToolResult) string {
				is.Equal(len(res.Content), 1)
				tc, ok := res.Content[0].(*mcp.TextContent)
				is.True(ok) // a text content
				return tc.Text
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "héllo"}})
			is.NoErr(err)
			is.Equal(text(res), "héllo")

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 40, "b": 2}})
			is.NoErr(err)
			is.Equal(text(res), "42")
			is.Equal(res.StructuredContent, map[string]any{"sum": 42.0})

			// Session era: a server→client elicitation/create; 2026-07-28:
			// an input_required result the SDK's MRTR loop answers and
			// retries.
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "Why?"}})
			is.NoErr(err)
			is.True(!res.IsError)
			is.Equal(text(res), "The user answered: answer to Why?")

			slow := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0, "steps": 3}}
			slow.SetProgressToken("p1")
			res, err = cs.CallTool(ctx, slow)
			is.NoErr(err)
			is.Equal(text(res), "slow: finished 3 steps in 0 seconds")
			for want := 1.0; want <= 3; want++ {
				select {
				case got := <-progress:
					is.Equal(got, want)
				case <-ctx.Done():
					t.Fatal("progress notification missing")
				}
			}

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "bytes", Arguments: map[string]any{"n": 1 << 20}})
			is.NoErr(err)
			is.Equal(len(text(res)), 1<<20)

			// toggle: list_changed reaches the client (session era: directly;
			// 2026-07-28: on the subscriptions/listen the SDK opened in
			// Connect).
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle", Arguments: map[string]any{}})
			is.NoErr(err)
			select {
			case <-toolsChanged:
			case <-ctx.Done():
				t.Fatal("no tools/list_changed")
			}
			tools, err = cs.ListTools(ctx, nil)
			is.NoErr(err)
			is.Equal(tools.Tools[len(tools.Tools)-1].Name, "bonus")

			prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
			is.NoErr(err)
			is.Equal(len(prompt.Messages), 1)

			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "example://counter"})
			is.NoErr(err)
			calls := "6" // the tool calls so far
			if tc.want == "2026-07-28" {
				calls = "7" // ask was called twice: the call and its retry
			}
			is.Equal(read.Contents[0].Text, calls)
		})
	}
}

// testFlags runs the binary's example-server subcommand directly.
func testFlags(t *testing.T, bin string) {
	run := func(stdin string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"example-server"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code = cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("running %v: %v", args, err)
		}
		return out.String(), errOut.String(), code
	}

	t.Run("page size", func(t *testing.T) {
		is := is.New(t)
		out, _, code := run(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n", "--page-size", "2", "--name", "flagged")
		is.Equal(code, 0)
		is.NoErr(checkStdout([]byte(out)))
		is.Equal(gjson.Get(out, "result.tools.#").Int(), int64(2))
		is.True(gjson.Get(out, "result.nextCursor").Exists())
	})
	t.Run("stdout carries protocol only", func(t *testing.T) {
		is := is.New(t)
		out, errOut, code := run("garbage\n"+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n", "--log-level", "debug")
		is.Equal(code, 0)
		is.NoErr(checkStdout([]byte(out)))
		is.Equal(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not valid JSON"}}`+"\n"+
			`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
		is.True(strings.Contains(errOut, "bad input line")) // the diagnostic is on stderr
	})
	t.Run("help", func(t *testing.T) {
		is := is.New(t)
		out, errOut, code := run("", "-h")
		is.Equal(code, 0)
		is.Equal(out, "")
		is.True(strings.Contains(errOut, "--page-size") || strings.Contains(errOut, "-page-size"))
	})
	for _, args := range [][]string{{"--bogus"}, {"extra"}, {"--log-level", "loud"}, {"--page-size", "-1"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			out, errOut, code := run("", args...)
			is.Equal(code, 2) // a usage error
			is.Equal(out, "")
			is.True(errOut != "")
		})
	}
}
