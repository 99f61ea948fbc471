package cli

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listenRemedy says in one line why serve could not listen on addr, given
// by flag, and what to do: a port another process holds, a port below 1024
// without the privilege, an address this machine does not have.
func listenRemedy(flag, addr string, err error) string {
	port := addr
	if _, p, splitErr := net.SplitHostPort(addr); splitErr == nil {
		port = p
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("cannot listen on %s %s: another process is using port %s; stop it, or choose another port (%s 127.0.0.1:0 picks a free one and the startup line names it)", flag, addr, port, flag)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Sprintf("cannot listen on %s %s: not allowed to use port %s (ports below 1024 need privileges); choose a port of 1024 or above, e.g. %s 127.0.0.1:8080", flag, addr, port, flag)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("cannot listen on %s %s: this machine has no such address; use one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for every interface", flag, addr)
	}
	return fmt.Sprintf("cannot listen on %s %s: %v; choose another HOST:PORT (%s 127.0.0.1:0 picks a free port)", flag, addr, err, flag)
}
