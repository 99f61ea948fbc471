package transport

import "io"

// DirectReader returns r read as NewStdio reads its input: where r is an
// *os.File or a net.Conn that the runtime polls without blocking (a
// non-blocking pipe or socket, on Linux), with read(2) made directly,
// without the runtime's system-call bookkeeping, which would wake its
// monitor thread at each read of a process that was idle (see NewStdio);
// anything else, and any descriptor in a build with the race detector, is
// returned as it is.
func DirectReader(r io.Reader) io.Reader { return rawReader(r) }

// DirectWriter is DirectReader for writes, made whole as an io.Writer's
// are. os.Stdout and os.Stderr are returned as they are: the os package
// ends the process on a write to a pipe whose reader has gone (SIGPIPE)
// only through them; another descriptor for the same pipe (see
// DirectReader's conditions) gets EPIPE as an error.
func DirectWriter(w io.Writer) io.Writer { return rawWriter(w) }
