//go:build linux

package transport

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervisorSupported says that ChildConfig.Supervisor is used here.
const supervisorSupported = true

// controlFD is the supervisor's descriptor of the control socket.
const controlFD = 3

// controlPair returns the two ends of a control socket: the gateway's,
// which the runtime polls, and the supervisor's. Both are close-on-exec;
// the supervisor's reaches it through exec.Cmd.ExtraFiles.
func controlPair() (gateway, supervisor *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: control socket: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("transport: control socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control"), nil
}

// readStarted reads the supervisor's first line from the control socket
// and returns the server's pid.
func readStarted(ctl *os.File) (int, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < 4096 {
		n, err := ctl.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
			continue
		}
		if err != nil {
			return 0, errors.New("the supervisor ended before it started the server")
		}
	}
	word, rest, _ := bytes.Cut(line, []byte(" "))
	switch string(word) {
	case ctlStarted:
		pid, err := strconv.Atoi(string(rest))
		if err == nil && pid > 0 {
			return pid, nil
		}
	case ctlFailed:
		return 0, errors.New(string(rest))
	}
	return 0, fmt.Errorf("the supervisor said %q, not what it should", line)
}

// supervise is Supervise on Linux.
func supervise(o supervisorOptions) int {
	var st unix.Stat_t
	if err := unix.Fstat(controlFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		fmt.Fprintln(os.Stderr, "mcp-stdio supervise: no control socket on descriptor 3 (this command is run by mcp-stdio serve)")
		return 2
	}
	unix.CloseOnExec(controlFD) // the server must not hold it
	ctl := os.NewFile(controlFD, "control")

	// Caught from here on, so that none of them ends the supervisor: they
	// are passed on once the server runs.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)

	server := &exec.Cmd{
		Path:   o.path,
		Args:   o.argv,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
			// Should the supervisor itself be killed (by someone else,
			// with SIGKILL), the server does not outlive it.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if err := server.Start(); err != nil {
		fmt.Fprintf(ctl, "%s %s\n", ctlFailed, strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	pid := server.Process.Pid
	fmt.Fprintf(ctl, "%s %d\n", ctlStarted, pid)
	// The server's stdin ends when the gateway closes its end, and the
	// gateway sees the server's stdout end when the server closes it:
	// copies kept here would prevent neither from being seen. (Stderr is
	// kept for the supervisor's own messages.)
	releaseStdio()

	exited := make(chan struct{})
	go func() {
		awaitExit(pid)
		close(exited)
	}()
	asked := make(chan byte)
	gatewayGone := make(chan struct{})
	go readControl(ctl, asked, gatewayGone)

	group := -pid
	var stdinGrace, termGrace <-chan time.Time
	for {
		select {
		case <-exited:
			// The server is not reaped yet, so its group id is still its
			// own: kill what it left behind, then reap it.
			_ = unix.Kill(group, unix.SIGKILL)
			_ = server.Wait()
			return exitLike(server.ProcessState)
		case b := <-asked:
			switch b {
			case ctlTerminate:
				_ = unix.Kill(group, unix.SIGTERM)
			case ctlKill:
				_ = unix.Kill(group, unix.SIGKILL)
			}
		case s := <-sigs:
			_ = unix.Kill(group, s.(syscall.Signal))
		case <-gatewayGone:
			gatewayGone = nil
			stdinGrace = time.After(o.stdinGrace)
		case <-stdinGrace:
			stdinGrace = nil
			_ = unix.Kill(group, unix.SIGTERM)
			termGrace = time.After(o.termGrace)
		case <-termGrace:
			termGrace = nil
			_ = unix.Kill(group, unix.SIGKILL)
		}
	}
}

// releaseStdio points descriptors 0 and 1 at /dev/null.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		// Without /dev/null, closing them does the same for the pipes; the
		// descriptors may then be reused, which nothing here minds.
		unix.Close(0)
		unix.Close(1)
		return
	}
	defer null.Close()
	_ = unix.Dup3(int(null.Fd()), 0, 0)
	_ = unix.Dup3(int(null.Fd()), 1, 0)
}

// readControl hands each byte the gateway sends on to asked, and closes
// gone when the gateway's end is closed.
func readControl(ctl *os.File, asked chan<- byte, gone chan<- struct{}) {
	b := make([]byte, 1)
	for {
		n, err := ctl.Read(b)
		if n == 1 {
			asked <- b[0]
		}
		if err != nil {
			close(gone)
			return
		}
	}
}

// awaitExit waits until process pid (a child of this process) has exited,
// without reaping it.
func awaitExit(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// exitLike returns the exit status that reports how the server ended, or
// ends this process with the signal that ended the server.
func exitLike(ps *os.ProcessState) int {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return 1
	case ws.Exited():
		return ws.ExitStatus()
	case !ws.Signaled():
		return 1
	}
	sig := ws.Signal()
	switch sig {
	case unix.SIGKILL:
	case unix.SIGTERM, unix.SIGINT, unix.SIGHUP:
		// The Go runtime dies of these by the signal itself once nothing
		// is notified of them, unless they are ignored.
		if signal.Ignored(sig) {
			return 128 + int(sig)
		}
		signal.Reset(sig)
	default:
		return 128 + int(sig)
	}
	_ = unix.Kill(os.Getpid(), sig)
	// The signal is on its way; should it not arrive, say it with a status.
	time.Sleep(time.Second)
	return 128 + int(sig)
}
