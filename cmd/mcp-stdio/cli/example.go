package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/exampleserver"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// ExampleServerCommand is the hidden subcommand that runs the bundled
// example stdio server; serve starts it as its default child.
const ExampleServerCommand = "example-server"

// ExampleServer runs the bundled example stdio MCP server on stdin and
// stdout until stdin ends. stdout carries protocol messages only; logs go to
// stderr.
//
//	mcp-stdio example-server [--page-size N] [--name NAME] [--log-level LEVEL] [--max-message-size BYTES] [--session-era-only] [--refuse-reserved-meta] [--x-mcp-header] [--ask-roots]
func ExampleServer(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, opt Options) error {
	fs := newFlagSet("mcp-stdio " + ExampleServerCommand)
	pageSize := fs.Int("page-size", 0, "page size of tools/list, resources/list, resources/templates/list and prompts/list (0: no pagination)")
	name := fs.String("name", "mcp-stdio-example", "the server name reported in serverInfo")
	logLevel := fs.String("log-level", "info", "stderr log level: debug, info, warn or error")
	maxSize := fs.Int("max-message-size", 0, "largest accepted input line in bytes (0: 64 MiB)")
	sessionOnly := fs.Bool("session-era-only", false, "speak the session era only (MCP 2024-11-05 to 2025-11-25), as a server written before 2026-07-28: "+
		"server/discover is -32601, _meta versions are ignored, requests before initialize are refused")
	paramHeader := fs.Bool("x-mcp-header", false, "annotate the echo tool's text argument with x-mcp-header \"Text\" (clients of 2026-07-28 over HTTP mirror it in an Mcp-Param-Text header)")
	askRoots := fs.Bool("ask-roots", false, "ask a session-era client that declared roots for them once the connection has started (as server-everything and server-filesystem do), and offer the roots tool")
	strictMeta := fs.Bool("refuse-reserved-meta", false, "with --session-era-only, refuse requests whose params._meta carries io.modelcontextprotocol/ keys (-32600), as a dual-era Python SDK server does on a session-era connection")
	usage := usagePrinter(fs, fmt.Sprintf("usage: mcp-stdio %s [flags]\n\n"+
		"Runs the bundled example MCP server on stdin/stdout (both protocol eras,\n"+
		"or the session era only with --session-era-only).\n\nFlags:\n", ExampleServerCommand), helpLayout{})
	if err := fs.Parse(args); err != nil {
		// Help goes to stderr here: this command's stdout is a protocol stream.
		return parseError(err, "mcp-stdio "+ExampleServerCommand, usage, stderr, stderr)
	}
	if fs.NArg() > 0 {
		return usageError("%s: unexpected argument %q", ExampleServerCommand, fs.Arg(0))
	}
	if *pageSize < 0 || *maxSize < 0 {
		return usageError("%s: --page-size and --max-message-size must not be negative", ExampleServerCommand)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError("%s: --log-level: %v", ExampleServerCommand, err)
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", ExampleServerCommand)
	if opt.OwnProcess {
		var restore func()
		stdin, restore = tuneStdioProcess(stdin, getenv, logger)
		defer restore()
		// Its own pipes, read and written without the runtime's
		// system-call bookkeeping (see transport.NewStdio): a write
		// through the os package's stdout would wake the runtime's
		// monitor at each answer as a read of stdin would at each
		// request.
		stdin = transport.DirectReader(stdin)
		var restoreOut func()
		stdout, restoreOut = directStdout(stdout, nil) // a failed write stops the server
		defer restoreOut()
	}
	err := exampleserver.Serve(ctx, stdin, stdout, exampleserver.Options{
		Name:               *name,
		Version:            opt.Version,
		PageSize:           *pageSize,
		MaxMessageSize:     *maxSize,
		Logger:             logger,
		SessionEraOnly:     *sessionOnly,
		ParamHeader:        *paramHeader,
		RefuseReservedMeta: *strictMeta,
		AskRoots:           *askRoots,
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted: a normal way for a stdio server to end
	}
	return err
}
