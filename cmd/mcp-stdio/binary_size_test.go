package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Nearly all of serve's idle memory is the binary's own pages (see
// BENCHMARKS.md, "serve at 2026-07-28"): a package that keeps code alive
// far beyond its own size must not creep back in. text/template (and
// html/template above it) calls reflect's MethodByName, which makes the
// linker keep every exported method of every type in the program: 1.85 MB
// of mcp-stdio and 1.3 MiB of serve's idle RSS the day it was removed.
func TestBinaryLinksNoMethodByNameUser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{"text/template", "html/template"} {
		if slices.Contains(deps, banned) {
			t.Errorf("mcp-stdio links %s: it keeps every exported method in the binary; write the text by hand (see auth/server/as_consent.go)", banned)
		}
	}
}
