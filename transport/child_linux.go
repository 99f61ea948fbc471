//go:build linux

package transport

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setProcessAttributes puts the child in a process group of its own, so
// that signals reach everything it starts, and asks the kernel to SIGKILL it
// when the gateway dies.
//
// Pdeathsig fires when the thread that started the child exits. Go threads
// outlive the goroutines that use them unless a goroutine exits while
// locked to its thread (runtime.LockOSThread without Unlock); nothing in
// this program does that.
func setProcessAttributes(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
}

// terminateGroup sends SIGTERM to the child's process group.
func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the child's process group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// awaitExitAndKillGroup waits until the child has exited without reaping
// it, then kills whatever is left in its process group. While the child is
// unreaped its pid, and so its group id, cannot be reused by an unrelated
// process.
func awaitExitAndKillGroup(p *os.Process) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	killGroup(p)
}
