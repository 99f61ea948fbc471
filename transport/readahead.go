package transport

import "io"

// bufferPool lends the buffers a lazy read (see lazyReader) reads into.
type bufferPool interface {
	// takeBuffer returns a buffer, not empty, that is the caller's until
	// it gives it back.
	takeBuffer() []byte
	// giveBuffer takes back a buffer takeBuffer returned, or a slice of
	// one from its start; a slice too short to be one is dropped.
	giveBuffer(b []byte)
}

// lazyReader is a connection that can wait for bytes without holding a
// buffer: the read takes one from a pool only once there is something
// for it (rawConn's, on Linux).
type lazyReader interface {
	// readsLazily reports whether readLazy works; a wrapper whose
	// connection cannot says false.
	readsLazily() bool
	// readLazy reads as Read does, into a buffer taken from pool: buf
	// holds the n bytes read, nil when n is 0, and is the caller's to
	// give back.
	readLazy(pool bufferPool) (buf []byte, n int, err error)
}

// readAhead reads what conn has next: where conn reads lazily, into a
// buffer of pool's taken only once there is something to read; else one
// byte, into one. buf holds the n bytes read, nil when n is 0, and is the
// caller's to give back to pool (which drops one).
func readAhead(conn io.Reader, one *[1]byte, pool bufferPool) (buf []byte, n int, err error) {
	if lr, ok := conn.(lazyReader); ok && lr.readsLazily() {
		return lr.readLazy(pool)
	}
	n, err = conn.Read(one[:])
	if n == 0 {
		return nil, 0, err
	}
	return one[:n], n, err
}
