package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// shellQuote's output, given back to a shell, is the same argv, on one
// line.
func TestShellQuote(t *testing.T) {
	for _, argv := range [][]string{
		{"npx", "-y", "@modelcontextprotocol/server-everything"},
		{"./my-server", "--flag=a,b", "x:y"},
		{"sh", "-c", `echo "it's" >&2; exit 3`},
		{"sh", "-c", "read -r line\nprintf '%s\\n' \"$line\"\texit"},
		{"", "two words", "back\\slash", "$HOME", "*"},
	} {
		is := is.New(t)
		q := shellQuote(argv)
		is.True(!strings.ContainsAny(q, "\n\r\t"))
		if _, err := exec.LookPath("bash"); err != nil {
			continue // $'…' is bash's
		}
		got, err := exec.Command("bash", "-c", `eval "set -- $1"; for a in "$@"; do printf '%s\0' "$a"; done`, "bash", q).Output()
		is.NoErr(err)
		is.Equal(string(got), strings.Join(argv, "\x00")+"\x00")
	}
	is.New(t).Equal(shellQuote([]string{"sh", "-c", "exit 3"}), "sh -c 'exit 3'")
}
