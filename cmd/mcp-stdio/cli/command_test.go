package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

func TestSplitCommand(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string][]string{
		"gcloud auth print-access-token":                              {"gcloud", "auth", "print-access-token"},
		"az account get-access-token --query accessToken -o tsv":      {"az", "account", "get-access-token", "--query", "accessToken", "-o", "tsv"},
		`  sh -c 'vault read -field=token secret/mcp | tr -d "\n"'  `: {"sh", "-c", `vault read -field=token secret/mcp | tr -d "\n"`},
		`"/Applications/My Tool/bin/tok" --x`:                         {"/Applications/My Tool/bin/tok", "--x"},
		`a"b c"'d e'f`:                                                {"ab cd ef"},
		`"a\"b\\c\$d\e"`:                                              {`a"b\c$d\e`},
		`a\ b $HOME ~ *`:                                              {"a b", "$HOME", "~", "*"}, // nothing expanded
		`''`:                                                          {""},
	} {
		got, err := splitCommand(in)
		is.NoErr(err)
		is.Equal(got, want) // in
	}
	for _, in := range []string{"", "   ", `'open`, `"open`, `trailing\`} {
		_, err := splitCommand(in)
		is.True(err != nil) // in
	}
}

// FuzzSplitCommand: splitting never panics, and an argument list joined
// back with single quotes splits to itself.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"gcloud auth print-access-token", `sh -c 'a | b'`, `"x\"y" z\ w`, `'`, `\`, "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := splitCommand(s)
		if err != nil {
			return
		}
		var quoted []string
		for _, a := range args {
			if strings.Contains(a, "'") || !utf8.ValidString(a) {
				return
			}
			quoted = append(quoted, "'"+a+"'")
		}
		again, err := splitCommand(strings.Join(quoted, " "))
		if err != nil || len(again) != len(args) {
			t.Fatalf("%q split to %q, requoted to %q", s, args, again)
		}
		for i := range args {
			if again[i] != args[i] {
				t.Fatalf("%q split to %q, requoted to %q", s, args, again)
			}
		}
	})
}
