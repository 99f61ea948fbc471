//go:build !linux

package transport

import (
	"errors"
	"fmt"
	"os"
)

// supervisorSupported says that ChildConfig.Supervisor is ignored here:
// children are started directly.
const supervisorSupported = false

func controlPair() (gateway, supervisor *os.File, err error) {
	return nil, nil, errors.New("transport: no supervisor outside Linux")
}

func readStarted(*os.File) (int, error) {
	return 0, errors.New("transport: no supervisor outside Linux")
}

// supervise is Supervise outside Linux, where there is none.
func supervise(supervisorOptions) int {
	fmt.Fprintln(os.Stderr, "mcp-stdio supervise: supported on Linux only")
	return 2
}
