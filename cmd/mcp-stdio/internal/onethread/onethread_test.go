package onethread_test

import (
	"runtime"
	"testing"

	_ "github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/onethread"
)

// Importing the package leaves one thread of Go code, whatever the
// machine or the environment (the commands apply GOMAXPROCS later).
func TestImportSetsOneThread(t *testing.T) {
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS is %d after the import, want 1", n)
	}
}
