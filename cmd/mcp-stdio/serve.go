package main

import (
	"context"
	"errors"
	"io"
)

// runServe is the serve subcommand.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("serve: not built yet")
}
