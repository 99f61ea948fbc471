//go:build !linux

package auth

// portOwner names the process listening on port where the platform lets
// us find it; here it cannot, and the message names the port only.
func portOwner(int) string { return "" }
