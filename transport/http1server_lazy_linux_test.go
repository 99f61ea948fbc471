package transport

import "net"

// lazyListener returns ln with each connection it accepts read and written
// through rawIO, which reads lazily: what HTTP1Server does itself on Linux
// outside the race detector, here under it too.
func lazyListener(ln net.Listener) net.Listener { return rawListener{ln} }

// lazyReadsHere: connections can be read lazily on this platform.
const lazyReadsHere = true

type rawListener struct{ net.Listener }

func (l rawListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if rc := newRawConn(c); rc != nil {
		return rc, nil
	}
	return c, nil
}
