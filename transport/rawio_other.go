//go:build !linux

package transport

import (
	"io"
	"net"
)

// rawReader returns r: reads without the runtime's system-call
// bookkeeping are made on Linux only (see rawio_linux.go).
func rawReader(r io.Reader) io.Reader { return r }

// rawWriter returns w, as rawReader returns r.
func rawWriter(w io.Writer) io.Writer { return w }

// rawConnOf returns c, as rawReader returns r.
func rawConnOf(c net.Conn) net.Conn { return c }
