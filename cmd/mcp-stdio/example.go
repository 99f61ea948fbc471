package main

import (
	"context"
	"errors"
	"io"
)

// exampleServerCommand is the hidden subcommand that runs the bundled
// example stdio server; serve starts it as its default child.
const exampleServerCommand = "example-server"

// runExampleServer runs the bundled example stdio MCP server.
func runExampleServer(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("example-server: not built yet")
}
