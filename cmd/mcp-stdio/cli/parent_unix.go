//go:build unix && !linux

package cli

import (
	"os"
	"time"
)

// watchParent calls gone once this process's parent, pid, has died: its
// parent process id changes when it is reparented, which is looked at
// every parentPollInterval.
func watchParent(pid int, gone func()) (stop func(), err error) {
	if os.Getppid() != pid {
		return func() {}, parentMismatch(pid, gone)
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(parentPollInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if os.Getppid() != pid {
					gone()
					return
				}
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-ended }, nil
}
