// Command mcp-stdio is a gateway between MCP's stdio transport and its HTTP
// transports, in both directions.
//
//	mcp-stdio [flags] URL          relay: a local stdio client to a remote server
//	mcp-stdio serve [flags] [-- CMD ARGS...]
//	                               serve: a local stdio server as Streamable HTTP
//
// Run mcp-stdio --help for the flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// One thread of Go code, decided before the other packages start.
	_ "github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/onethread"
)

func main() {
	// SIGHUP is each command's to handle (cli: the relay and serve end on
	// it as on SIGTERM, serve --config reloads on it).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err))
}
