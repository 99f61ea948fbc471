//go:build !linux

package cli

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// releaseStartupPages does nothing outside Linux.
func releaseStartupPages(*slog.Logger) {}

// releaseWhenQuiet returns out: outside Linux there is nothing to give
// back.
func releaseWhenQuiet(_ context.Context, out io.Writer, _ time.Duration, _ *slog.Logger) io.Writer {
	return out
}
