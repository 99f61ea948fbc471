//go:build linux

package transport

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessAttributes puts the process in a process group of its own, so
// that signals reach everything it starts. A server started directly is
// also killed (SIGKILL) by the kernel when the gateway dies; a supervisor
// is not (it watches its control socket instead, and ends the server's
// group itself).
//
// Pdeathsig fires when the thread that started the child exits. Go threads
// outlive the goroutines that use them unless a goroutine exits while
// locked to its thread (runtime.LockOSThread without Unlock); nothing in
// this program does that.
func setProcessAttributes(cmd *exec.Cmd, supervisor bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !supervisor {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
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
	awaitExit(p.Pid)
	killGroup(p)
}
