//go:build !linux

package transport

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessAttributes does nothing outside Linux: the child shares the
// gateway's process group and is not killed when the gateway dies.
func setProcessAttributes(*exec.Cmd, bool) {}

// terminateGroup asks the child to stop (SIGTERM where signals exist).
func terminateGroup(p *os.Process) { _ = p.Signal(syscall.SIGTERM) }

// killGroup kills the child.
func killGroup(p *os.Process) { _ = p.Kill() }

// awaitExitAndKillGroup does nothing outside Linux, where the child cannot
// be waited for without reaping it.
func awaitExitAndKillGroup(*os.Process) {}
