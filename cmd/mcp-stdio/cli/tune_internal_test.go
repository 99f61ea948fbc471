package cli

import (
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/matryer/is"
)

// The relay's soft memory limit is twice its budget plus the slack,
// unless GOMEMLIMIT says otherwise.
func TestSoftMemoryLimit(t *testing.T) {
	is := is.New(t)
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	log := slog.New(slog.DiscardHandler)

	softMemoryLimit(256<<20, func(string) string { return "" }, log)
	is.Equal(debug.SetMemoryLimit(-1), int64(512<<20+memoryLimitSlack))

	debug.SetMemoryLimit(prev)
	softMemoryLimit(256<<20, func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	}, log)
	is.Equal(debug.SetMemoryLimit(-1), prev) // the environment's, applied by the runtime
}
