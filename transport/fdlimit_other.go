//go:build !unix

package transport

// RaiseFileLimit returns 0: this system's limit of open files is not
// asked for (see the Unix version).
func RaiseFileLimit() int { return 0 }
