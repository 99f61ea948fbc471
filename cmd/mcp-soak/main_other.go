//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "mcp-soak: Linux only (it reads /proc); run it on Linux")
	os.Exit(2)
}
