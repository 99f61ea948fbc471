//go:build !unix

package cli

import (
	"io"
	"os"
)

// pollableStdin returns stdin unchanged where the poller cannot wait on
// it.
func pollableStdin(f *os.File) (io.Reader, func()) { return f, func() {} }

// pollableStdout returns stdout unchanged, as pollableStdin does stdin.
func pollableStdout(f *os.File) (io.Writer, func()) { return f, func() {} }
