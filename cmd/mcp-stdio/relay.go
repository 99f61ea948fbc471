package main

import (
	"context"
	"errors"
	"io"
)

// runRelay is the relay subcommand (the default).
func runRelay(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("relay: not built yet")
}
