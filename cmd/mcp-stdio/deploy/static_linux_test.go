//go:build linux

package deploy_test

import (
	"debug/elf"
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestStaticBinaryRuns checks what the Containerfile relies on: a
// CGO_ENABLED=0 build of mcp-stdio is a static executable (no program
// interpreter, no shared library), which runs on a base without libc.
func TestStaticBinaryRuns(t *testing.T) {
	is := is.New(t)
	bin := binary(t)
	f, err := elf.Open(bin)
	is.NoErr(err)
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	libs, err := f.ImportedLibraries()
	is.NoErr(err)
	is.Equal(len(libs), 0) // no shared library
	out, err := exec.Command(bin, "--version").CombinedOutput()
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(out)), "mcp-stdio 0.0.0-deploy-test")
}
