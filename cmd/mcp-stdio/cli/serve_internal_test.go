package cli

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/mw"
)

func TestByteSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"64MiB", 64 << 20, true},
		{"64 MiB", 64 << 20, true},
		{"2kb", 2 << 10, true},
		{"1G", 1 << 30, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"-1", 0, false},
		{"1.5MiB", 0, false},
		{"99999999999GiB", 0, false},
	} {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			var b byteSize
			err := b.Set(tt.in)
			is.Equal(err == nil, tt.ok)
			if tt.ok {
				is.Equal(int64(b), tt.want)
			}
		})
	}
}

// --input-timeout is how long a parked 2026-07-28 call waits for its
// retry: it reaches ServeConfig.InputTimeout, 10 minutes by default, and
// must be positive.
func TestServeInputTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		err  bool
	}{
		{nil, mw.DefaultStateTTL, false},
		{[]string{"--input-timeout", "90s"}, 90 * time.Second, false},
		{[]string{"--input-timeout", "2"}, 2 * time.Second, false},
		{[]string{"--input-timeout", "0"}, 0, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			is := is.New(t)
			var f serveFlags
			fs, _ := newServeFlagSet(&f)
			is.NoErr(fs.Parse(tc.args))
			f.maxBuffered = f.maxBody
			cfg, _, err := f.config([]string{"true"}, io.Discard, slog.New(slog.DiscardHandler))
			if tc.err {
				is.True(err != nil) // refused
				is.True(strings.Contains(err.Error(), "--input-timeout"))
				return
			}
			is.NoErr(err)
			is.Equal(cfg.InputTimeout, tc.want)
		})
	}
}

// --allow-client-id-url is repeatable, is kept as written, and refuses a
// URL that cannot be a client_id.
func TestServeAllowClientIDURLFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"--allow-client-id-url", "https://a.example/c.json", "--allow-client-id-url", "https://b.example/x/c"},
			[]string{"https://a.example/c.json", "https://b.example/x/c"}, ""},
		{[]string{"--allow-client-id-url", "http://a.example/c.json"}, nil, "not https"},
		{[]string{"--allow-client-id-url", "https://a.example"}, nil, "no path"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			is := is.New(t)
			var f serveFlags
			fs, _ := newServeFlagSet(&f)
			is.NoErr(fs.Parse(tc.args))
			f.maxBuffered = f.maxBody
			f.oauth.enable = true
			_, _, err := f.config([]string{"true"}, io.Discard, slog.New(slog.DiscardHandler))
			if tc.err != "" {
				is.True(err != nil) // refused
				is.True(strings.Contains(err.Error(), "--allow-client-id-url"))
				is.True(strings.Contains(err.Error(), tc.err))
				return
			}
			is.NoErr(err)
			is.Equal([]string(f.clientIDURLs), tc.want)
		})
	}
}

// --root takes a directory's path (made absolute, as a file:// URI) or a
// file:// URI as it is; nothing else.
func TestRootURIs(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	got, err := rootURIs([]string{dir, "file:///srv/data", "rel dir"})
	is.NoErr(err)
	wd, err := filepath.Abs("rel dir")
	is.NoErr(err)
	is.Equal(got, []string{"file://" + filepath.ToSlash(dir), "file:///srv/data", "file://" + strings.ReplaceAll(filepath.ToSlash(wd), " ", "%20")})
	for _, bad := range []string{"https://example.com/x", ""} {
		_, err := rootURIs([]string{bad})
		is.True(err != nil) // bad
	}
}
