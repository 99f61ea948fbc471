//go:build !unix && !windows

package cli

import "errors"

// watchParent cannot watch a parent here.
func watchParent(int, func()) (stop func(), err error) {
	return func() {}, errors.New("this system cannot watch a parent process")
}
