package cli

import (
	"testing"

	"golang.org/x/sys/unix"
)

// clearParentDeathSignal undoes what a test's endWithParent asked of the
// kernel for this test process.
func clearParentDeathSignal(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0); err != nil {
		t.Error(err)
	}
}
