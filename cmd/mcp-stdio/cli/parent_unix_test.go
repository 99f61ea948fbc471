//go:build unix && !linux

package cli

import "testing"

// clearParentDeathSignal has nothing to undo here.
func clearParentDeathSignal(*testing.T) {}
