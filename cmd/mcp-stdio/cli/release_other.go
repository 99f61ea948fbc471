//go:build !linux

package cli

import "log/slog"

// releaseStartupPages does nothing outside Linux.
func releaseStartupPages(*slog.Logger) {}
