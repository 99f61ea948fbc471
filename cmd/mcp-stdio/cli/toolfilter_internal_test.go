package cli

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// --allow-tool and --deny-tool are repeatable, mcp-remote's --ignore-tool
// adds to --deny-tool, they reach ServeConfig as written, and an empty
// pattern is refused in a line naming the flag.
func TestServeToolFilterFlags(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		allow, deny []string
		err         string
	}{
		{nil, nil, nil, ""},
		{[]string{"--allow-tool", "github_*", "--allow-tool", "echo", "--deny-tool", "github_delete*", "--ignore-tool", "rm"},
			[]string{"github_*", "echo"}, []string{"github_delete*", "rm"}, ""},
		{[]string{"--deny-tool", ""}, nil, nil, "--deny-tool"},
		{[]string{"--allow-tool", ""}, nil, nil, "--allow-tool"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			is := is.New(t)
			var f serveFlags
			fs, _ := newServeFlagSet(&f)
			is.NoErr(fs.Parse(tc.args))
			f.maxBuffered = f.maxBody
			cfg, _, err := f.config([]string{"true"}, io.Discard, slog.New(slog.DiscardHandler))
			if tc.err != "" {
				is.True(err != nil) // refused
				is.True(strings.Contains(err.Error(), tc.err))
				is.True(strings.Contains(err.Error(), "glob"))
				return
			}
			is.NoErr(err)
			is.Equal(cfg.AllowTools, tc.allow)
			is.Equal(cfg.DenyTools, tc.deny)
		})
	}
}
