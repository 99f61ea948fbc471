//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package auth

import "os"

// fileLocking reports whether lock files really lock on this platform. Here
// they do not: two relays sharing a store may both refresh a rotating token,
// and the loser signs in again. Writes stay atomic.
const fileLocking = false

// tryLock pretends to lock f.
func tryLock(*os.File) (bool, error) { return true, nil }

// unlockFile releases nothing.
func unlockFile(*os.File) error { return nil }
