package cli

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"

	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// watchParent calls gone once the parent process pid has exited, which a
// handle to it tells (WaitForSingleObject). A parent that cannot be
// opened has exited already, or is not one serve may watch.
func watchParent(pid int, gone func()) (stop func(), err error) {
	if os.Getppid() != pid {
		return func() {}, fmt.Errorf("%s=%d names a process that is not serve's parent (%d)", pipeline.ParentPIDEnv, pid, os.Getppid())
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		gone() // no such process: it exited before it could be opened
		return func() {}, nil
	}
	if err != nil {
		return func() {}, fmt.Errorf("cannot watch the parent process: %w", err)
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer windows.CloseHandle(h)
		for {
			ev, err := windows.WaitForSingleObject(h, uint32(parentPollInterval.Milliseconds()))
			switch {
			case err == nil && ev == windows.WAIT_OBJECT_0:
				gone()
				return
			case err != nil:
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return func() { close(done); <-ended }, nil
}
