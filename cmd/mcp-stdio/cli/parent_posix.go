//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// parentMismatch deals with pid not being the parent: when pid is gone,
// the parent died first (gone is called); otherwise the variable named
// another process, and that is an error.
func parentMismatch(pid int, gone func()) error {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		gone()
		return nil
	}
	return fmt.Errorf("%s=%d names a process that is not serve's parent (%d)", pipeline.ParentPIDEnv, pid, os.Getppid())
}
