//go:build unix

package transport

import (
	"math"
	"syscall"
)

// RaiseFileLimit raises the process's soft limit of open files
// (RLIMIT_NOFILE) to its hard limit where the system allows, and returns
// the soft limit then in force (0 when it cannot be read). The Go runtime
// already raises it at start on most systems; this call changes nothing
// then, and so leaves the limit child processes get as the runtime set it
// (the one the process started with).
func RaiseFileLimit() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			r = raised
		}
	}
	if r.Cur > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(r.Cur)
}
